# Aggregation: raw samples -> summary tables -> plots -> one self-contained HTML report.
# These rules never time anything, so they run beside each other but never beside
# a timing job (they take one unit of the machine lock).
#
# Their outputs are update(): Snakemake deletes a failed job's outputs, and a report that
# refuses a corrupt record would otherwise take the user's last good report (and tables)
# with it. update() backs each output up before the job and restores it when it fails
# (tests/test_faults.py runs it); the scripts write each file whole, at the end.
#
# Each runs through d2lperf run-step: its log capped (d2lperf.logcap), and when it fails,
# the reason in one line on the console and its restored outputs made older than its inputs
# (d2lperf.steps, read by the Snakefile), so that the next run runs it again.

from d2lperf import steps as STEPS

TABLES_CAPTION = "../../report/captions/tables.rst"


rule summarise:
    input:
        script="scripts/d2lperf/commands/summarise.py",
        declarations=DECLARATIONS,
        reference=REFERENCE_TABLES,
        labels=LABEL_TABLES,
        schema="workflow/schemas/samples.schema.yaml",
        runs=RUN_RECORDS,
        samples=SAMPLE_TABLES,
    output:
        summary=report(
            update(f"{RESULTS}/summary.csv"), caption=TABLES_CAPTION, category="Tables"
        ),
        outputs=report(
            update(f"{RESULTS}/outputs.csv"), caption=TABLES_CAPTION, category="Tables"
        ),
        verdicts=report(
            update(f"{RESULTS}/verdicts.csv"),
            caption=TABLES_CAPTION,
            category="Tables",
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
    message:
        "Summarising every sample into tables and deciding the claims"
    shell:
        "{params.py:q} -m d2lperf run-step --log {log:q} --outputs {output:q} --step summarise --"
        " {params.py:q} -m d2lperf summarise --runs {input.runs:q} --reference {input.reference:q}"
        " --labels {input.labels:q} --schema {input.schema:q} --summary {output.summary:q}"
        " --outputs {output.outputs:q} --verdicts {output.verdicts:q} --band {params.band:q}"


rule plots:
    input:
        script="scripts/d2lperf/commands/plots.py",
        declarations=DECLARATIONS,
        labels=LABEL_TABLES,
        summary=f"{RESULTS}/summary.csv",
        samples=SAMPLE_TABLES,
    output:
        report(
            update(expand(f"{RESULTS}/plots/{{section}}.svg", section=SECTIONS)),
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
    message:
        "Drawing a plot per section"
    shell:
        "{params.py:q} -m d2lperf run-step --log {log:q} --outputs {output:q} --step plots --"
        " {params.py:q} -m d2lperf plots --summary {input.summary:q}"
        " --samples {input.samples:q} --labels {input.labels:q} --out {output:q}"


rule compare:
    input:
        script="scripts/d2lperf/commands/compare.py",
        summaries=[f"results/{m}/summary.csv" for m in [RESULTS_ID, *OTHER_MACHINES]],
        verdicts=[f"results/{m}/verdicts.csv" for m in [RESULTS_ID, *OTHER_MACHINES]],
        machines=[f"results/{m}/machine.json" for m in [RESULTS_ID, *OTHER_MACHINES]],
    output:
        table=update(f"{RESULTS}/comparison.csv"),
        verdicts=update(f"{RESULTS}/verdicts_by_machine.csv"),
        machines=update(f"{RESULTS}/machines_compared.csv"),
        plot=update(f"{RESULTS}/plots/comparison.svg"),
    log:
        f"{RESULTS}/logs/compare.log",
    benchmark:
        f"{RESULTS}/benchmarks/compare.tsv"
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        baseline=BASELINE,
    message:
        f"Comparing this machine with {len(OTHER_MACHINES)} other(s): {', '.join(OTHER_MACHINES)}"
    shell:
        "{params.py:q} -m d2lperf run-step --log {log:q} --outputs {output:q} --step compare --"
        " {params.py:q} -m d2lperf compare --summaries {input.summaries:q}"
        " --verdicts {input.verdicts:q} --baseline {params.baseline:q}"
        " --table {output.table:q} --verdicts-table {output.verdicts:q}"
        " --machines {input.machines:q} --machines-table {output.machines:q}"
        " --plot {output.plot:q}"


# The report's order and headings of the sections, from the table of sections: made again
# whenever the table changes (a section added, a title reworded).
rule sections_table:
    input:
        table="scripts/d2lperf/sections.py",
        declarations=DECLARATIONS,
    output:
        f"{RESULTS}/sections.csv",
    log:
        f"{RESULTS}/logs/sections_table.log",
    params:
        table=SECTION_TABLE.CSV_COLUMNS,
    message:
        "Writing the table of sections the report reads"
    run:
        SECTION_TABLE.write_csv(output[0])


rule report:
    input:
        unpack(comparison_inputs),
        unpack(kept_record),
        script="scripts/d2lperf/commands/render_report.py",
        # the report's parts: a change to one renders the report again
        parts=sorted(str(p) for p in Path("scripts/d2lperf/report").glob("*.py")),
        template="report/templates/report.html.j2",
        sections=rules.sections_table.output[0],
        labels=LABEL_TABLES,
        machine=f"{RESULTS}/machine.json",
        summary=f"{RESULTS}/summary.csv",
        outputs=f"{RESULTS}/outputs.csv",
        verdicts=f"{RESULTS}/verdicts.csv",
        runs=RUN_RECORDS,
        plots=rules.plots.output,
        benchmarks=[f"{RESULTS}/benchmarks/{rule_name(s, f)}.tsv" for s, f in JOBS],
    output:
        report(
            update(f"{RESULTS}/report.html"),
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
        kept=kept_args,
    message:
        f"Writing the report, {RESULTS}/report.html"
    shell:
        "{params.py:q} -m d2lperf run-step --log {log:q} --outputs {output:q} --step report --"
        " {params.py:q} -m d2lperf report --machine {input.machine:q}"
        " --summary {input.summary:q} --outputs {input.outputs:q}"
        " --verdicts {input.verdicts:q} --runs {input.runs:q} --plots {input.plots:q}"
        " --benchmarks {input.benchmarks:q} --sections {input.sections:q}"
        " --labels {input.labels:q}"
        " --template {input.template:q} --preset {params.preset:q}"
        " {params.comparison:q} {params.kept:q} --out {output:q}"
