# Reproduces the "Computational Performance" chapter of Dive into Deep Learning
# (MXNet, 2019) on this machine: one job per section, then the report.
#   snakemake --cores 4                      # documents' parameters
#   snakemake --cores 4 --config preset=ci   # small workloads


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/sections.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/archive.smk"


# An aggregate step that failed kept its last good outputs (update()), restored with a fresh
# time: made older than any input here, so this run runs the step again (d2lperf.steps).
STEPS.age_failed(
    r.log[0]
    for r in (rules.summarise, rules.plots, rules.compare, rules.report, rules.archive)
)


# Under a cluster executor (README: "On a SLURM cluster") the rules that run on a compute
# node are submitted: every framework's section rules (MXNet's and its PyTorch and JAX
# twins), machine_info and blas_reference; tables, plots, report, archive run on the
# submitting host.
localrules:
    all,
    summarise,
    plots,
    compare,
    report,
    config_used,
    sections_table,
    archive,


rule all:
    default_target: True
    input:
        f"{RESULTS}/report.html",


onsuccess:
    print(f"\nReport: {RESULTS}/report.html")
