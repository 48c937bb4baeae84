# Aggregation: raw samples -> summary tables -> plots -> one self-contained HTML report.
# These rules never time anything, so they run beside each other but never beside
# a timing job (they take one unit of the machine lock).


rule summarise:
    input:
        script="scripts/summarise.py",
        reference="report/reference.csv",
        schema="workflow/schemas/samples.schema.yaml",
        runs=expand(f"{RESULTS}/{{section}}/run.json", section=EXPERIMENTS),
        samples=expand(f"{RESULTS}/{{section}}/samples.csv", section=EXPERIMENTS),
    output:
        summary=f"{RESULTS}/summary.csv",
        outputs=f"{RESULTS}/outputs.csv",
    log:
        f"{RESULTS}/logs/summarise.log",
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
    shell:
        "{params.py} {input.script} --runs {input.runs} --reference {input.reference}"
        " --schema {input.schema} --summary {output.summary} --outputs {output.outputs}"
        " > {log} 2>&1"


rule plots:
    input:
        script="scripts/plots.py",
        summary=f"{RESULTS}/summary.csv",
        samples=expand(f"{RESULTS}/{{section}}/samples.csv", section=EXPERIMENTS),
    output:
        expand(f"{RESULTS}/plots/{{section}}.svg", section=EXPERIMENTS),
    log:
        f"{RESULTS}/logs/plots.log",
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
    shell:
        "{params.py} {input.script} --summary {input.summary} --samples {input.samples}"
        " --out {output} > {log} 2>&1"


rule report:
    input:
        script="scripts/render_report.py",
        template="report/templates/report.html.j2",
        sections="report/sections.csv",
        machine=f"{RESULTS}/machine.json",
        summary=f"{RESULTS}/summary.csv",
        outputs=f"{RESULTS}/outputs.csv",
        runs=expand(f"{RESULTS}/{{section}}/run.json", section=EXPERIMENTS),
        plots=rules.plots.output,
    output:
        f"{RESULTS}/report.html",
    log:
        f"{RESULTS}/logs/report.log",
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        preset=config["preset"],
    shell:
        "{params.py} {input.script} --machine {input.machine} --summary {input.summary}"
        " --outputs {input.outputs} --runs {input.runs} --plots {input.plots}"
        " --sections {input.sections} --template {input.template} --preset {params.preset} --out {output} > {log} 2>&1"
