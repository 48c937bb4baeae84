# One rule per section of the chapter, named after it (`snakemake --forcerun hybridize`).
# Each calls scripts/sections/mxnet/<section>.py in the experiment environment with explicit
# arguments from the preset, holds the whole machine lock while it times, and
# records a failure instead of losing the other sections' results.


rule machine_info:
    input:
        script="scripts/machine_info.py",
    output:
        f"{RESULTS}/machine.json",
    log:
        f"{RESULTS}/logs/machine_info.log",
    benchmark:
        f"{RESULTS}/benchmarks/machine_info.tsv"
    conda:
        EXPERIMENT_ENV
    params:
        py=EXPERIMENT_PY,
        machine=RESULTS_ID,
        environment=job_environment(),
    shell:
        "{params.environment}{params.py} {input.script} --machine {params.machine} --out {output}"
        " > {log} 2>&1"


rule blas_reference:
    input:
        script="scripts/blas_reference.py",
    output:
        BLAS_REFERENCE,
    log:
        f"results/{MACHINE}/logs/blas_reference.log",
    conda:
        EXPERIMENT_ENV
    params:
        py=EXPERIMENT_PY,
    shell:
        "{params.py} {input.script} --out {output} > {log} 2>&1"


for section in EXPERIMENTS:

    rule:
        name:
            section
        input:
            unpack(lambda wildcards, section=section: blas_inputs(section)),
            script=f"scripts/sections/mxnet/{section}.py",
        output:
            **experiment_outputs(section),
        log:
            f"{RESULTS}/logs/{section}.log",
        benchmark:
            f"{RESULTS}/benchmarks/{section}.tsv"
        conda:
            EXPERIMENT_ENV
        resources:
            machine_lock=MACHINE_LOCK,
        params:
            py=EXPERIMENT_PY,
            args=section_args(section),
            environment=job_environment(section),
        shell:
            "{params.environment}{params.py} {input.script} {params.args}"
            " --csv {output.csv} --sidecar {output.sidecar} > {log} 2>&1 "
            + on_failure(section)
