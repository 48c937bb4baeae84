# One rule per section of the chapter and framework, named after it (`snakemake --forcerun
# <section>` for the documents' framework's, `<section>_<framework>` for a twin). Each calls
# the manager (`d2lperf measure`), which runs scripts/sections/<section>/<section>_<framework>.py
# in that framework's environment with explicit arguments from the preset, in fresh
# processes, and judges its stages; the job holds the whole machine lock while it times, and
# records a failure instead of losing the other sections' results. The console shows each
# job's message and a long section's progress (fd 3: d2lperf.progress); everything the
# script prints goes to its log.

# Under a cluster executor each job asks for the GPUs the table of sections gives it, unless
# config key cluster_gpus is false (a cluster without GPUs): then no job asks for any (the
# timing jobs' requests come from d2lperf.plan, which reads the same key).
CLUSTER_GPUS = config.get("cluster_gpus", True)


rule machine_info:
    input:
        script="scripts/d2lperf/commands/machine_info.py",
    output:
        f"{RESULTS}/machine.json",
    log:
        f"{RESULTS}/logs/machine_info.log",
    benchmark:
        f"{RESULTS}/benchmarks/machine_info.tsv"
    conda:
        MACHINE_ENV
    resources:
        **SECTION_TABLE.other_job_resources("machine_info", cluster_gpus=CLUSTER_GPUS),
    params:
        py=MACHINE_PY,
        machine=RESULTS_ID,
        environment=PLAN.environment(config, FACTS),
    message:
        "Recording this machine (CPU, memory, GPUs, software)"
    shell:
        "env {params.environment:q} {params.py:q} -m d2lperf machine-info"
        " --machine {params.machine:q} --out {output:q} > {log:q} 2>&1"


rule blas_reference:
    input:
        script="scripts/d2lperf/commands/blas_reference.py",
    output:
        BLAS_REFERENCE,
    log:
        f"results/{MACHINE}/logs/blas_reference.log",
    conda:
        EXPERIMENT_ENV
    resources:
        **SECTION_TABLE.other_job_resources("blas_reference", cluster_gpus=CLUSTER_GPUS),
    params:
        py=EXPERIMENT_PY,
    message:
        "Computing the float64 reference the BLAS variant is checked against"
    shell:
        "{params.py:q} -m d2lperf blas-reference --out {output:q} > {log:q} 2>&1"


for job in TIMING_JOBS:

    rule:
        name:
            job.rule
        input:
            **({"blas_reference": BLAS_REFERENCE} if job.needs_blas_reference else {}),
            script=job.script,
        output:
            # update(): Snakemake neither deletes them before a re-run nor on Ctrl-C (it
            # backs them up, restores them if the job fails), and the scripts replace them
            # atomically when they finish, so an interrupted re-run keeps the previous
            # results; the next run re-runs it (rerun-incomplete, in the profiles).
            csv=update(job.csv),
            sidecar=update(job.sidecar),
        log:
            job.log,
        benchmark:
            job.benchmark
        conda:
            CONDA_ENV[job.framework]
        # The whole machine lock (local runs); under SLURM, the section's own request
        # (d2lperf.sections): its nodes exclusively, its GPUs, time and memory.
        resources:
            **job.resources,
        params:
            # Bound here, while the loop is at this job: the shell line below is
            # formatted when the job runs, long after the loop has ended.
            section=job.section,
            framework=job.framework,
            py=INTERPRETER[job.framework],
            args=job.args,
            environment=job.environment,
            workflow_py=WORKFLOW_PY,
            manager_py=MANAGER_PY,
        message:
            job.message
        # A failed script still leaves a run record the report shows, with its log; an
        # interrupted one (Ctrl-C, SIGTERM) fails the job and keeps the previous results.
        # The log is capped (d2lperf.logcap: head and tail kept, the cut said); Snakemake's
        # pipefail keeps the manager's exit status for record_failure.
        shell:
            "env {params.environment:q} D2LPERF_PROGRESS_FD=3"
            " {params.manager_py:q} -m d2lperf measure --section {params.section:q}"
            " --framework {params.framework:q} --python {params.py:q}"
            " --script {input.script:q} {params.args:q}"
            " --csv {output.csv:q} --sidecar {output.sidecar:q} 3>&2 2>&1"
            " | {params.workflow_py:q} -m d2lperf logcap {log:q}"
            " || {params.workflow_py:q} -m d2lperf record-failure"
            " --section {params.section:q} --framework {params.framework:q}"
            " --exit-code $? --log {log:q}"
            " --csv {output.csv:q} --sidecar {output.sidecar:q}"
