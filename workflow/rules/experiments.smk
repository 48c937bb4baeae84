# One rule per section of the chapter. Each calls its script in the experiment
# environment with explicit arguments from the preset, holds the machine lock
# while it times, and records a failure instead of losing the other results.


rule machine_info:
    input:
        script="scripts/machine_info.py",
    output:
        f"{RESULTS}/machine.json",
    log:
        f"{RESULTS}/logs/machine_info.log",
    conda:
        EXPERIMENT_ENV
    params:
        py=EXPERIMENT_PY,
        machine=MACHINE,
    shell:
        "{params.py} {input.script} --machine {params.machine} --out {output} > {log} 2>&1"


rule hybridize:
    input:
        script="scripts/hybridize.py",
    output:
        **experiment_outputs("hybridize"),
    log:
        f"{RESULTS}/logs/hybridize.log",
    conda:
        EXPERIMENT_ENV
    resources:
        machine_lock=MACHINE_LOCK,
    params:
        py=EXPERIMENT_PY,
        timing=timing_args("hybridize"),
        forward_passes=PRESET["hybridize"]["forward_passes"],
        export_dir=f"{RESULTS}/hybridize/model",
    shell:
        "{params.py} {input.script} {params.timing}"
        " --forward-passes {params.forward_passes} --export-dir {params.export_dir}"
        " --csv {output.csv} --sidecar {output.sidecar} > {log} 2>&1 "
        + on_failure("hybridize")
