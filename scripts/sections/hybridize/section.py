"""The section: Hybrid imperative and symbolic programming (hybridize)."""

from __future__ import annotations

from d2lperf.sections import COUNT, REPEATED, REPEATED_REQUIRED, AAPair, Section, SpeedClaim

SECTION = Section(
    order=1,
    title="Hybrid imperative and symbolic programming (hybridize)",
    heading="命令式和符号式混合编程",
    plot_title="MLP forward passes before and after hybridize()",
    options={"forward_passes": COUNT, **REPEATED,
             "compile_runs": {**COUNT, "description": "PyTorch only, cold and warm "
                              "torch.compile timings in fresh processes"}},
    required=("forward_passes", *REPEATED_REQUIRED),
    document_options=(("--forward-passes", 1000, "MLP forward passes per timed sample"),),
    framework_options={"compile_runs": "pytorch"},
    off_the_plot=("jit_script_compile", "torch_compile_cold", "torch_compile_warm"),
    exports_model=True,
    # the MLP before hybridize() timed twice, the copies swapping labels by process
    aa_pairs=(AAPair("aa_hybridize", "mlp_before_hybridize_twin", "mlp_before_hybridize",
                     swapped=True),),
    claims=(SpeedClaim(
        "hybridize_speeds_up_mlp",
        "compiling the MLP into a graph (hybridize) makes its forward passes faster",
        "hybridize() speeds up the MLP", faster="mlp_after_hybridize",
        slower="mlp_before_hybridize", label="after/before"),),
)
