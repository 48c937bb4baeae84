# Archive: `snakemake --cores 1 archive` packs this machine's results, the config
# used, the locked environments and the code's commit into archives/<machine>.tar.gz
# (deterministic, with a SHA-256 manifest). d2lperf import adds such
# archives from other machines under results/.


rule config_used:
    output:
        f"{RESULTS}/config.yaml",
    log:
        f"{RESULTS}/logs/config_used.log",
    params:
        config=config,
    message:
        "Writing the configuration this run used"
    run:
        import yaml

        with open(output[0], "w", encoding="utf-8") as handle:
            yaml.safe_dump(
                dict(params.config), handle, sort_keys=True, allow_unicode=True
            )


rule archive:
    input:
        script="scripts/d2lperf/commands/archive_results.py",
        report=f"{RESULTS}/report.html",
        config=f"{RESULTS}/config.yaml",
        schema="workflow/schemas/samples.schema.yaml",
        locks=["envs/workflow.lock.txt", *(f.lock for f in FRAMEWORK.values())],
    output:
        f"archives/{RESULTS_ID}.tar.gz",
    log:
        f"logs/archive-{RESULTS_ID}.log",
    conda:
        WORKFLOW_ENV
    params:
        py=WORKFLOW_PY,
        results=lambda wildcards, input: os.path.dirname(input.report),
        # every environment's locked packages, under its own name in the archive
        extra=lambda wildcards, input: [
            f"{os.path.basename(lock)}={lock}" for lock in input.locks
        ],
    message:
        f"Archiving this machine's results: archives/{RESULTS_ID}.tar.gz"
    shell:
        "{params.py:q} -m d2lperf run-step --log {log:q} --outputs {output:q} --step archive --"
        " {params.py:q} -m d2lperf archive --results {params.results:q}"
        " --schema {input.schema:q} --extra {params.extra:q} --out {output:q}"
