# Aggregation: raw samples -> summary tables -> plots -> one self-contained HTML report.
# These rules never time anything, so they run beside each other but never beside
# a timing job (they take one unit of the machine lock).

TABLES_CAPTION = "../../report/captions/tables.rst"


rule summarise:
    input:
        script="scripts/summarise.py",
        reference="report/reference.csv",
        schema="workflow/schemas/samples.schema.yaml",
        runs=RUN_RECORDS,
        samples=SAMPLE_TABLES,
    output:
        summary=report(
            f"{RESULTS}/summary.csv", caption=TABLES_CAPTION, category="Tables"
        ),
        outputs=report(
            f"{RESULTS}/outputs.csv", caption=TABLES_CAPTION, category="Tables"
        ),
        verdicts=report(
            f"{RESULTS}/verdicts.csv", caption=TABLES_CAPTION, category="Tables"
        ),
    log:
        f"{RESULTS}/logs/summarise.log",
    benchmark:
        f"{RESULTS}/benchmarks/summarise.tsv"
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        band=config.get("practical_band", 0.05),
    shell:
        "{params.py} {input.script} --runs {input.runs} --reference {input.reference}"
        " --schema {input.schema} --summary {output.summary} --outputs {output.outputs}"
        " --verdicts {output.verdicts} --band {params.band}"
        " > {log} 2>&1"


rule plots:
    input:
        script="scripts/plots.py",
        summary=f"{RESULTS}/summary.csv",
        samples=SAMPLE_TABLES,
    output:
        report(
            expand(f"{RESULTS}/plots/{{section}}.svg", section=EXPERIMENTS),
            caption="../../report/captions/plots.rst",
            category="Plots",
        ),
    log:
        f"{RESULTS}/logs/plots.log",
    benchmark:
        f"{RESULTS}/benchmarks/plots.tsv"
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
    shell:
        "{params.py} {input.script} --summary {input.summary} --samples {input.samples}"
        " --out {output} > {log} 2>&1"


rule compare:
    input:
        script="scripts/compare.py",
        summaries=[f"results/{m}/summary.csv" for m in [RESULTS_ID, *OTHER_MACHINES]],
        verdicts=[f"results/{m}/verdicts.csv" for m in [RESULTS_ID, *OTHER_MACHINES]],
    output:
        table=f"{RESULTS}/comparison.csv",
        verdicts=f"{RESULTS}/verdicts_by_machine.csv",
        plot=f"{RESULTS}/plots/comparison.svg",
    log:
        f"{RESULTS}/logs/compare.log",
    benchmark:
        f"{RESULTS}/benchmarks/compare.tsv"
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        baseline=BASELINE,
    shell:
        "{params.py} {input.script} --summaries {input.summaries} --verdicts {input.verdicts}"
        " --baseline {params.baseline} --table {output.table}"
        " --verdicts-table {output.verdicts} --plot {output.plot} > {log} 2>&1"


rule report:
    input:
        unpack(comparison_inputs),
        script="scripts/render_report.py",
        template="report/templates/report.html.j2",
        sections="report/sections.csv",
        machine=f"{RESULTS}/machine.json",
        summary=f"{RESULTS}/summary.csv",
        outputs=f"{RESULTS}/outputs.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        runs=RUN_RECORDS,
        plots=rules.plots.output,
        benchmarks=expand(f"{RESULTS}/benchmarks/{{section}}.tsv", section=EXPERIMENTS),
    output:
        report(
            f"{RESULTS}/report.html",
            caption="../../report/captions/report.rst",
            category="Report",
        ),
    log:
        f"{RESULTS}/logs/report.log",
    benchmark:
        f"{RESULTS}/benchmarks/report.tsv"
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        preset=config["preset"],
        comparison=comparison_args,
    shell:
        "{params.py} {input.script} --machine {input.machine} --summary {input.summary}"
        " --outputs {input.outputs} --verdicts {input.verdicts} --runs {input.runs} --plots {input.plots}"
        " --benchmarks {input.benchmarks}"
        " --sections {input.sections} --template {input.template} --preset {params.preset}"
        " {params.comparison} --out {output} > {log} 2>&1"
