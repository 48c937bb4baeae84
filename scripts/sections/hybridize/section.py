"""The section: Hybrid imperative and symbolic programming (hybridize)."""

from __future__ import annotations

from d2lperf.sections import COUNT, REPEATED, REPEATED_REQUIRED, AAPair, Section, SpeedClaim

SECTION = Section(
    order=1,
    title="Hybrid imperative and symbolic programming (hybridize)",
    heading="命令式和符号式混合编程",
    plot_title="MLP forward passes before and after hybridize()",
    options={"forward_passes": {**COUNT, "description": "MLP forward passes per timed sample"},
             **REPEATED,
             "compile_runs": {**COUNT, "description": "cold and warm torch.compile timings, "
                              "each in a fresh process (PyTorch only)"}},
    required=("forward_passes", *REPEATED_REQUIRED),
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
        slower="mlp_before_hybridize", label="after/before",
        site="hybridized MLP, × faster"),),
    presets={
        "documents": {
            "forward_passes": 1000,
            "warmup": 1,
            # A PyTorch round (four cases of 1000 passes) takes 0.4 s against the 8-10 s every
            # process spends importing torch and compiling the net it times; its twin's per-process
            # spread is mostly the rounds' noise (a median of 10 rounds: 0.03-0.15 in log ratio), so
            # PyTorch's processes time twice the rounds, for 4-5 s each. JAX's op-by-op MLP takes
            # 3.4 s per 1000 passes (each op dispatched on its own), a round of its three cases
            # about 7 s: at 10 rounds only 2 processes fit the budget (a t-interval of 1 degree of
            # freedom), at 2 rounds about 7, in the same time.
            "repeats": {"mxnet": 10, "pytorch": 20, "jax": 2},
            "processes": 8,
            # A budget is room for the planned processes on a quiet 2-core machine with room to
            # spare; PyTorch's first process also times torch.compile cold and warm.
            "budget_seconds": {"mxnet": 180, "pytorch": 240},
            "compile_runs": 2,
        },
        "ci": {
            "forward_passes": 100,
            "warmup": 1,
            "repeats": 3,
            "processes": 2,
            "budget_seconds": 2,
            "compile_runs": 1,
        },
    },
)
