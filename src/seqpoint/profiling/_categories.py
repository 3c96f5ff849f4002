"""Operation categories of the "Demystifying BERT" study, from operator and kernel names (torch-free).

:func:`categorize` maps an ATen operator name (``aten::addmm``), an autograd node name
(``AddmmBackward0``, ``autograd::engine::evaluate_function: AddmmBackward0``), an
optimizer range (``Optimizer.step#LAMB.step``), a collective (``c10d::allreduce_``) or an
inductor kernel (``triton_per_fused__softmax_add_0``) to one of :data:`CATEGORIES`;
:func:`kernel_category` does the same for a GPU kernel's own name, and :func:`context_category`
names the enclosing ranges that own every operator under them.
"""

from __future__ import annotations

import re

from seqpoint.measurements import CATEGORIES

__all__ = ["CATEGORIES", "canonical_op_name", "categorize", "context_category", "kernel_category"]

#: Operator names (canonical, see :func:`canonical_op_name`) of each category.
_NAMES: dict[str, str] = {
    "gemm": "mm addmm linear matmul addmv mv dot vdot _scaled_mm addr outer _addmm_activation",
    "batched_gemm": ("bmm baddbmm addbmm einsum scaled_dot_product_attention _scaled_dot_product_attention_math "
                     "_scaled_dot_product_flash_attention _scaled_dot_product_flash_attention_for_cpu "
                     "_scaled_dot_product_efficient_attention _scaled_dot_product_cudnn_attention "
                     "_flash_attention_forward _efficient_attention_forward"),
    "softmax": ("softmax _softmax log_softmax _log_softmax _softmax_backward_data _log_softmax_backward_data "
                "safe_softmax _safe_softmax"),
    "layer_norm": ("layer_norm native_layer_norm native_layer_norm_backward group_norm native_group_norm rms_norm "
                   "_fused_rms_norm weight_norm _weight_norm_interface"),
    "activation": ("gelu gelu_ gelu_backward relu relu_ threshold_backward tanh tanh_ tanh_backward sigmoid sigmoid_ "
                   "sigmoid_backward hardtanh hardtanh_ hardtanh_backward silu silu_backward elu elu_backward "
                   "leaky_relu leaky_relu_backward softplus mish glu clamp_min"),
    "dropout": ("dropout native_dropout native_dropout_backward feature_dropout bernoulli bernoulli_ _fused_dropout "
                "_masked_scale alpha_dropout"),
    "reduction": ("sum mean norm linalg_vector_norm max min amax amin argmax argmin prod var std var_mean logsumexp "
                  "cumsum any all _foreach_norm_reduce"),
    "copy": ("copy_ _to_copy to contiguous clone cat stack index_select embedding embedding_dense_backward "
             "embedding_backward gather scatter scatter_add scatter_add_ index index_put index_put_ _index_put_impl_ "
             "index_add index_add_ repeat constant_pad_nd pad flip roll fill_ zero_ zeros zeros_like ones ones_like "
             "full full_like new_zeros new_full empty empty_like empty_strided new_empty new_empty_strided split "
             "split_with_sizes unbind chunk narrow slice select view reshape _reshape_alias _unsafe_view permute "
             "transpose t expand unsqueeze squeeze flatten unflatten as_strided detach alias lift_fresh resize_ "
             "repeat_interleave masked_select nonzero arange randint randn rand normal_ uniform_ where_copy set_ "
             "_copy_from _copy_from_and_resize t_ item _local_scalar_dense resolve_conj resolve_neg"),
    "elementwise": ("add add_ sub sub_ rsub mul mul_ div div_ addcmul addcmul_ addcdiv addcdiv_ lerp lerp_ sqrt sqrt_ "
                    "rsqrt exp exp_ log log_ log1p pow pow_ neg neg_ reciprocal where masked_fill masked_fill_ clamp "
                    "clamp_ clamp_max abs sign lt gt le ge eq ne logical_and logical_or logical_not bitwise_and "
                    "bitwise_or bitwise_not maximum minimum fmod remainder floor ceil round trunc erf erfinv cos sin "
                    "square _amp_foreach_non_finite_check_and_unscale_ _amp_update_scale_ isnan isinf isfinite "
                    "nan_to_num sgn __and__ __or__ __xor__ __iand__ __ior__"),
    # DeepSpeech2's batch norm is not the BERT study's layer norm: kept apart so a
    # breakdown says which normalisation a model spends its time in.
    "batch_norm": ("batch_norm native_batch_norm native_batch_norm_backward _batch_norm_impl_index "
                   "_native_batch_norm_legit _native_batch_norm_legit_functional cudnn_batch_norm "
                   "cudnn_batch_norm_backward miopen_batch_norm"),
    # Fused loss kernels (CTC dominates DeepSpeech2 on a CPU) are not generic reductions.
    "loss": ("nll_loss nll_loss_forward nll_loss_backward nll_loss2d_forward nll_loss_nd cross_entropy_loss "
             "cross_entropy ctc_loss _ctc_loss _ctc_loss_backward"),
}
_EXACT: dict[str, str] = {n: category for category, names in _NAMES.items() for n in names.split()}

# "category: regex" lines; order matters: the first pattern that matches a canonical name wins.
_PATTERNS = tuple((category, re.compile(pattern)) for category, pattern in (line.split(": ") for line in """
communication: ^nccl|allreduce|all_reduce|allgather|all_gather|reduce_scatter|alltoall|all_to_all
optimizer: ^optimizer|_foreach_|_fused_adam|_fused_sgd|lamb|adam
rnn: lstm|gru|rnn
convolution: conv
batched_gemm: attention|attn|bmm
gemm: (?<!fb)gemm|matmul|^mm|addmm|linear
softmax: softmax
batch_norm: batch_norm
layer_norm: norm
dropout: dropout
activation: gelu|relu|tanh|sigmoid|silu
loss: loss
reduction: reduce|sum$|mean$|(max|avg)_pool
copy: copy|cat$|index|gather|scatter|embedding|view|stack|quantiz
""".strip().splitlines()))

# A kernel's own name, for a kernel no categorised operator launched (case-insensitive; first
# match wins): cuBLAS, CUTLASS, xmma, nvjet and rocBLAS (Cijk_) GEMMs, cuDNN and ATen kernels.
_KERNELS = tuple((category, re.compile(pattern, re.IGNORECASE)) for category, pattern in (
    line.split(": ") for line in r"""
communication: ^nccl
copy: ^memcpy|^memset
rnn: lstm|gru_|rnn
convolution: conv(?!ert)|implicit_gemm|fprop|dgrad|wgrad|winograd|scudnn|nchwtonhwc|nhwctonchw|fft
batched_gemm: flash|fmha|attention|attn|sdpa|bmm
gemm: (?<!fb)gemm|gemv|cublas|cutlass|xmma|nvjet|cijk_|matmul|epilogue::|splitkreduce
softmax: softmax
layer_norm: layer_?norm|rms_?norm|gammabeta|rowwisemoments
batch_norm: bn_fw|bn_bw|batch_?norm
loss: loss|ctc
dropout: dropout|bernoulli
optimizer: adam|lamb(?!da)|sgd|adagrad|multi_tensor_apply
activation: gelu|relu|silu|tanh|sigmoid|threshold
reduction: reduce|(max|avg|average)_?pool|cub::
copy: copy|fill|cat|gather|scatter|index|embedding|transpose|permute|distribution|quantiz
elementwise: elementwise|functor
""".strip().splitlines()))

# Inductor's generated kernels name the operators they fuse: triton_{poi,red,per,tem}_fused_<ops>_<n>.
_FUSED = re.compile(r"^triton_[a-z]+_fused_(.+)_\d+$")
# Which operator names a fused kernel: the heaviest of its operators, in this order.
_FUSED_ORDER = ("gemm", "batched_gemm", "convolution", "rnn", "softmax", "layer_norm", "batch_norm", "loss", "dropout",
                "activation", "reduction", "optimizer", "elementwise", "copy", "communication", "other")

#: Forward operators of a recurrent layer: every operator and kernel under them is ``rnn``.
_RNN_OPS = frozenset({"aten::lstm", "aten::gru", "aten::rnn_tanh", "aten::rnn_relu"})

_COLLECTIVE = re.compile(r"_?c10d\w*::|nccl:|gloo:")
_PACKET = re.compile(r"^(aten|prims|torch\.ops\.aten)\.")  # aten.addmm.default
_NAMESPACE = re.compile(r"^\w+::(?=[\w.]+$)")  # fbgemm::permute_pooled_embs, not torch::autograd::CppNode<...>
_BACKWARD = re.compile(r"Backward\d*$")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def canonical_op_name(name: str) -> str:
    """Lower-case operator name without namespace, overload or autograd decoration.

    ``aten::addmm`` → ``addmm``; ``aten.addmm.default`` → ``addmm``;
    ``autograd::engine::evaluate_function: AddmmBackward0`` → ``addmm``;
    ``Optimizer.step#LAMB.step`` → ``optimizer.step#lamb.step``.
    """
    n = name.strip().removeprefix("autograd::engine::evaluate_function:").strip()
    if n.startswith("Optimizer."):
        return n.lower()
    if _BACKWARD.search(n):
        return _CAMEL.sub("_", _BACKWARD.sub("", n)).lower()
    n = _NAMESPACE.sub("", _PACKET.sub("", n))
    if "." in n and not n.startswith("optimizer"):
        n = n.split(".", 1)[0]  # drop an overload name (addmm.default)
    return n.lower()


def categorize(op_name: str) -> str:
    """Category of an operator (``aten::gelu``, ``GeluBackward0``, ``Optimizer.step#LAMB.step``):
    one of :data:`CATEGORIES`, ``other`` when unknown."""
    if _COLLECTIVE.match(op_name):
        return "communication"
    n = canonical_op_name(op_name)
    if fused := _FUSED.match(n):
        return _fused_category(fused.group(1))
    if n.startswith("_foreach_"):
        return "optimizer"
    if n in _EXACT:
        return _EXACT[n]
    if n.endswith("_") and n[:-1] in _EXACT:
        return _EXACT[n[:-1]]
    for category, pattern in _PATTERNS:
        if pattern.search(n):
            return category
    return "other"


def _fused_category(ops: str) -> str:
    """The category of a fused kernel's operators (``add_native_layer_norm`` → ``layer_norm``):
    the longest known operator names read left to right, the heaviest category wins."""
    words, found, i = ops.split("_"), ["other"], 0
    while i < len(words):
        j = next((j for j in range(len(words), i + 1, -1) if "_".join(words[i:j]) in _EXACT), i + 1)
        found.append(categorize("_".join(words[i:j])))
        i = j
    return min(found, key=_FUSED_ORDER.index)


def kernel_category(kernel_name: str) -> str:
    """Category of a GPU kernel by its name alone (``ampere_sgemm_128x64_nn`` → ``gemm``,
    ``ncclKernel_AllReduce_RING_LL_Sum_float`` → ``communication``, ``Memcpy HtoD`` →
    ``copy``, ``triton_red_fused__softmax_0`` → ``softmax``); ``other`` when unknown."""
    if _FUSED.match(kernel_name):
        return categorize(kernel_name)
    name, depth = kernel_name, 0
    for i in range(len(name) - 1, -1, -1) if name.endswith(")") else ():
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:  # the parameter list's types (cudnn::reduced_divisor ...) say nothing
            name = name[:i]
            break
    return next((c for c, pattern in _KERNELS if pattern.search(name)), "other")


def context_category(name: str) -> str | None:
    """``optimizer`` for an optimizer step's range, ``rnn`` for a recurrent layer's forward:
    ranges that own every operator and kernel under them; None for any other name."""
    if name.startswith(("Optimizer.step", "Optimizer.zero_grad")):
        return "optimizer"
    return "rnn" if name in _RNN_OPS else None
