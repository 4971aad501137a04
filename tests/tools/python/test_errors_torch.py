"""A PyTorch user's mistakes raise in genesis what they raise in torch 1.13: each case makes the same mistake with
both, and genesis must raise the same exception type with torch's key phrase in the message (the phrase is checked
against torch too).  No message may show pybind11's internals, C++ names or a printed tensor.  File errors are the
OSError subclasses Python's own open() raises, with errno and filename (tests tools/python/src/errors.cpp and
genesis/_errors.py)."""
import errno
import os
import re
import types
import warnings

import pytest
import torch

import genesis
import genesis.nn.functional  # noqa: F401  (genesis.nn.functional as an attribute, as torch.nn.functional is)

# What a message must never contain: pybind11's internals, C++ spellings, a tensor's printed values.
FORBIDDEN = ("pybind11", "PYBIND11", "Unable to cast", "incompatible function arguments", "Invoked with",
             "NoGradGuard", "std::", "genesis::", "genesis._C", "nullptr", "retain_graph=true")
PRINTED_TENSOR = re.compile(r"tensor\(\[|Parameter containing")


def _ns(T):
    return types.SimpleNamespace(T=T, nn=T.nn, F=T.nn.functional, optim=T.optim, sched=T.optim.lr_scheduler,
                                 long=T.int64, f64=T.float64, i32=T.int32)


TORCH, GENESIS = _ns(torch), _ns(genesis)


def _leaf(m, n=2):
    return m.T.ones(n, requires_grad=True)


def _backward_twice(m):
    y = (_leaf(m) * _leaf(m)).exp().sum()
    y.backward()
    y.backward()


def _backward_under_no_grad(m):
    p = _leaf(m)
    with m.T.no_grad():
        (p * 2).sum().backward()


def _saved_then_changed(m):
    y = _leaf(m).exp()
    y.mul_(2)  # exp saved its output for backward
    y.sum().backward()


def _sgd(m, params, **kw):
    return m.optim.SGD(params, **{"lr": 0.1, **kw})


# (name, the mistake, torch's key phrase)
CASES = [
    # ---- shapes: matmul family
    ("matmul_2d", lambda m: m.T.ones(3, 7) @ m.T.ones(10, 5),
     "mat1 and mat2 shapes cannot be multiplied (3x7 and 10x5)"),
    ("matmul_1d_2d", lambda m: m.T.ones(3) @ m.T.ones(4, 2), "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x2)"),
    ("matmul_0d", lambda m: m.T.tensor(1.0) @ m.T.ones(2),
     "both arguments to matmul need to be at least 1D, but they are 0D and 1D"),
    ("matmul_batched", lambda m: m.T.ones(2, 3, 4) @ m.T.ones(2, 5, 6),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ("bmm_inner", lambda m: m.T.bmm(m.T.ones(2, 3, 4), m.T.ones(2, 5, 6)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    ("linear_shapes", lambda m: m.F.linear(m.T.ones(3, 7), m.T.ones(5, 10)),
     "mat1 and mat2 shapes cannot be multiplied (3x7 and 10x5)"),
    ("Linear_in_features", lambda m: m.nn.Linear(10, 5)(m.T.ones(3, 7)),
     "mat1 and mat2 shapes cannot be multiplied (3x7 and 10x5)"),
    # ---- shapes: broadcasting, cat, stack, views
    ("add_broadcast", lambda m: m.T.zeros(2, 3) + m.T.zeros(2, 4),
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("mul_broadcast_ranks", lambda m: m.T.zeros(5, 2, 3) * m.T.zeros(4, 3),
     "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1"),
    ("where_broadcast", lambda m: m.T.where(m.T.ones(3) > 0, m.T.ones(3), m.T.ones(4)),
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    ("mse_loss_shapes", lambda m: m.F.mse_loss(m.T.ones(2, 3), m.T.ones(3, 2)),
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"),
    ("cat_sizes", lambda m: m.T.cat([m.T.zeros(2, 3), m.T.zeros(2, 4)]),
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the "
     "list."),
    ("cat_empty", lambda m: m.T.cat([]), "cat(): expected a non-empty list of Tensors"),
    ("cat_0d", lambda m: m.T.cat([m.T.tensor(1.0), m.T.tensor(2.0)]),
     "zero-dimensional tensor (at position 0) cannot be concatenated"),
    ("stack_sizes", lambda m: m.T.stack([m.T.zeros(2, 3), m.T.zeros(2, 4)]),
     "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"),
    ("stack_empty", lambda m: m.T.stack([]), "stack expects a non-empty TensorList"),
    ("cat_of_a_tensor", lambda m: m.T.cat(m.T.ones(2, 3)),
     "cat(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    ("stack_of_a_tensor", lambda m: m.T.stack(m.T.ones(2, 3)),
     "stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    ("reshape_numel", lambda m: m.T.zeros(2, 3).reshape(7), "shape '[7]' is invalid for input of size 6"),
    ("view_numel", lambda m: m.T.zeros(2, 3).view(4, 2), "shape '[4, 2]' is invalid for input of size 6"),
    ("reshape_two_minus_ones", lambda m: m.T.zeros(2, 3).reshape(-1, -1), "only one dimension can be inferred"),
    ("view_strides", lambda m: m.T.zeros(2, 3).t().view(6),
     "view size is not compatible with input tensor's size and stride"),
    ("expand_size", lambda m: m.T.zeros(2, 3).expand(4, 4),
     "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [4, 4].  Tensor sizes: [2, 3]"),
    ("expand_rank", lambda m: m.T.zeros(2, 3).expand(3),
     "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)"),
    ("permute_rank", lambda m: m.T.zeros(2, 3).permute(0),
     "number of dimensions in the tensor input does not match the length of the desired ordering of dimensions i.e. "
     "input.dim() = 2 is not equal to len(dims) = 1"),
    # ---- dims and indices
    ("sum_dim", lambda m: m.T.zeros(2, 3).sum(5),
     "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ("transpose_dim", lambda m: m.T.zeros(2, 3).transpose(0, 3),
     "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    ("unsqueeze_dim", lambda m: m.T.zeros(2, 3).unsqueeze(5),
     "Dimension out of range (expected to be in range of [-3, 2], but got 5)"),
    ("softmax_dim", lambda m: m.F.softmax(m.T.zeros(2, 3), 3),
     "Dimension out of range (expected to be in range of [-2, 1], but got 3)"),
    ("index_int", lambda m: m.T.zeros(3)[5], "index 5 is out of bounds for dimension 0 with size 3"),
    ("too_many_indices", lambda m: m.T.zeros(2, 3)[0, 0, 0], "too many indices for tensor of dimension 2"),
    ("index_select_range", lambda m: m.T.zeros(2, 3).index_select(0, m.T.tensor([5])), "index out of range in self"),
    ("index_select_float", lambda m: m.T.zeros(3).index_select(0, m.T.tensor([0.0])),
     "index_select(): Expected dtype int32 or int64 for index"),
    ("gather_float", lambda m: m.T.ones(2, 3).gather(1, m.T.tensor([[0.0]])),
     "gather(): Expected dtype int64 for index"),
    ("gather_range", lambda m: m.T.ones(2, 3).gather(1, m.T.tensor([[5]])),
     "index 5 is out of bounds for dimension 1 with size 3"),
    ("scatter_range", lambda m: m.T.ones(2, 3).scatter(1, m.T.tensor([[5]]), 1.0),
     "index 5 is out of bounds for dimension 1 with size 3"),
    ("slice_step", lambda m: m.T.ones(3)[::-1], "step must be greater than zero"),
    ("topk_k", lambda m: m.T.ones(2, 3).topk(5), "selected index k out of range"),
    ("chunk_zero", lambda m: m.T.ones(4).chunk(0), "chunk expects `chunks` to be greater than 0, got: 0"),
    # ---- dtypes
    ("matmul_long_float", lambda m: m.T.ones(2, 3, dtype=m.long) @ m.T.ones(3, 2),
     "expected scalar type Long but found Float"),
    ("bmm_float_double", lambda m: m.T.bmm(m.T.ones(2, 3, 4), m.T.ones(2, 4, 5, dtype=m.f64)),
     "expected scalar type Float but found Double"),
    ("dot_long_float", lambda m: m.T.ones(3, dtype=m.long) @ m.T.ones(3),
     "dot : expected both vectors to have same dtype, but found Long and Float"),
    ("Linear_int64_input", lambda m: m.nn.Linear(3, 5)(m.T.ones(2, 3, dtype=m.long)),
     "mat1 and mat2 must have the same dtype"),
    ("linear_no_bias_long", lambda m: m.F.linear(m.T.ones(2, 3, dtype=m.long), m.T.ones(4, 3)),
     "expected scalar type Long but found Float"),
    ("conv2d_double_float", lambda m: m.F.conv2d(m.T.ones(1, 1, 3, 3, dtype=m.f64), m.T.ones(1, 1, 2, 2)),
     "expected scalar type Double but found Float"),
    ("where_condition", lambda m: m.T.where(m.T.ones(2), m.T.ones(2), m.T.ones(2)),
     "where expected condition to be a boolean tensor, but got a tensor with dtype Float"),
    ("neg_bool", lambda m: m.T.tensor([True]).neg(), "Negation, the `-` operator, on a bool tensor is not supported."),
    ("sub_bools", lambda m: m.T.tensor([True]) - m.T.tensor([True]),
     "Subtraction, the `-` operator, with two bool tensors is not supported."),
    ("add_inplace_cast", lambda m: m.T.ones(3, dtype=m.long).add_(m.T.ones(3)),
     "result type Float can't be cast to the desired output type Long"),
    ("add_inplace_shape", lambda m: m.T.ones(3).add_(m.T.ones(2, 3)),
     "output with shape [3] doesn't match the broadcast shape [2, 3]"),
    ("requires_grad_long", lambda m: m.T.ones(2, dtype=m.long).requires_grad_(),
     "only Tensors of floating point dtype can require gradients"),
    # ---- values and Python protocol
    ("item_many", lambda m: m.T.ones(2).item(), "only one element tensors can be converted to Python scalars"),
    ("bool_many", lambda m: bool(m.T.ones(2)), "Boolean value of Tensor with more than one value is ambiguous"),
    ("numpy_requires_grad", lambda m: _leaf(m).numpy(),
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    ("tensor_of_dict", lambda m: m.T.tensor({1: 2}), "Could not infer dtype of dict"),
    ("tensor_ragged", lambda m: m.T.tensor([[1], [2, 3]]), "expected sequence of length 1 at dim 1 (got 2)"),
    ("randn_negative", lambda m: m.T.randn(-1), "Trying to create tensor with negative dimension -1: [-1]"),
    ("randint_bounds", lambda m: m.T.randint(5, 2, (3,)),
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"),
    ("arange_step", lambda m: m.T.arange(0, 5, 0), "step must be nonzero"),
    ("device_string", lambda m: m.T.ones(2).to("nowhere"), "device type at start of device string: nowhere"),
    ("operand_str", lambda m: m.T.ones(2) + "a", "unsupported operand type(s) for +: 'Tensor' and 'str'"),
    ("attribute", lambda m: m.T.ones(2).foo, "'Tensor' object has no attribute 'foo'"),
    # ---- argument types (pybind11's own errors, reworded)
    ("linear_list", lambda m: m.F.linear([1.0, 2.0], m.T.ones(2, 2)),
     "linear(): argument 'input' (position 1) must be Tensor, not list"),
    ("linear_keyword_list", lambda m: m.F.linear(input=[1.0], weight=m.T.ones(2, 2)),
     "linear(): argument 'input' must be Tensor, not list"),
    ("linear_unknown_keyword", lambda m: m.F.linear(m.T.ones(2, 2), m.T.ones(2, 2), foo=1),
     "linear() got an unexpected keyword argument 'foo'"),
    ("linear_too_many", lambda m: m.F.linear(m.T.ones(2, 2), m.T.ones(2, 2), None, 1),
     "linear() takes from 2 to 3 positional arguments but 4 were given"),
    ("linear_missing", lambda m: m.F.linear(m.T.ones(2, 2)), "linear() missing 1 required positional argument"),
    ("Linear_of_none", lambda m: m.nn.Linear(2, 2)(None),
     "linear(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("abs_of_none", lambda m: m.T.abs(None), "abs(): argument 'input' (position 1) must be Tensor, not NoneType"),
    ("matmul_list", lambda m: m.T.matmul(m.T.ones(2, 2), [1, 2]),
     "matmul(): argument 'other' (position 2) must be Tensor, not list"),
    ("relu_str", lambda m: m.F.relu("x"), "relu(): argument 'input' (position 1) must be Tensor, not str"),
    ("add_str", lambda m: m.T.ones(2).add("a"), "add(): argument 'other' (position 1) must be Tensor, not str"),
    ("full_str", lambda m: m.T.full((2,), "a"), "full(): argument 'fill_value' (position 2) must be Number, not str"),
    ("zeros_str", lambda m: m.T.zeros("a"), "zeros(): argument 'size' (position 1) must be tuple of"),
    ("zeros_float", lambda m: m.T.zeros(2.5), "zeros(): argument 'size' (position 1) must be tuple of"),
    ("zeros_element", lambda m: m.T.zeros(2, "a"), "but found element of type str at pos 2"),
    ("reshape_str", lambda m: m.T.ones(2).reshape("a"), "reshape(): argument 'shape' (position 1) must be tuple of"),
    ("permute_str", lambda m: m.T.ones(2).permute("a"),
     "permute(): argument 'dims' (position 1) must be tuple of ints, not str"),
    ("zeros_keyword", lambda m: m.T.zeros(2, foo=1), "zeros() "),
    # ---- argument types of the functions written in Python
    ("leaky_relu_list", lambda m: m.F.leaky_relu([1.0]),
     "leaky_relu(): argument 'input' (position 1) must be Tensor, not list"),
    ("LeakyReLU_str", lambda m: m.nn.LeakyReLU()("x"),
     "leaky_relu(): argument 'input' (position 1) must be Tensor, not str"),
    ("cosine_similarity_list", lambda m: m.F.cosine_similarity([1.0], m.T.ones(1)),
     "cosine_similarity(): argument 'x1' (position 1) must be Tensor, not list"),
    ("pad_list", lambda m: m.F.pad([1.0], (1, 1)), "pad(): argument 'input' (position 1) must be Tensor, not list"),
    ("linalg_inv_list", lambda m: m.T.linalg.inv([[1.0]]), "argument 'A' (position 1) must be Tensor, not list"),
    # ---- nn layers
    ("Conv2d_channels", lambda m: m.nn.Conv2d(3, 4, 3)(m.T.ones(1, 2, 5, 5)),
     "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 channels, but got 2 channels "
     "instead"),
    ("Embedding_float", lambda m: m.nn.Embedding(10, 3)(m.T.ones(2)),
     "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int"),
    ("Embedding_range", lambda m: m.nn.Embedding(10, 3)(m.T.tensor([11])), "index out of range in self"),
    ("BatchNorm1d_features", lambda m: m.nn.BatchNorm1d(3)(m.T.ones(2, 4)),
     "running_mean should contain 4 elements not 3"),
    ("LayerNorm_shape", lambda m: m.nn.LayerNorm(3)(m.T.ones(2, 4)),
     "Given normalized_shape=[3], expected input with shape [*, 3], but got input of size[2, 4]"),
    ("max_pool2d_rank", lambda m: m.F.max_pool2d(m.T.ones(5), 2),
     "non-empty 3D or 4D (batch mode) tensor expected for input"),
    ("Linear_negative", lambda m: m.nn.Linear(-1, 3), "Trying to create tensor with negative dimension -1: [3, -1]"),
    ("Dropout_p", lambda m: m.nn.Dropout(p=2), "dropout probability has to be between 0 and 1, but got 2"),
    ("dropout_p", lambda m: m.F.dropout(m.T.ones(2), p=2), "dropout probability has to be between 0 and 1, but got 2"),
    ("ReLU_str", lambda m: m.nn.ReLU()("x"), "relu(): argument 'input' (position 1) must be Tensor, not str"),
    # ---- losses
    ("cross_entropy_float_target", lambda m: m.F.cross_entropy(m.T.ones(2, 3), m.T.ones(2)),
     "expected scalar type Long but found Float"),
    ("cross_entropy_int32_target", lambda m: m.F.cross_entropy(m.T.ones(2, 3), m.T.tensor([0, 1], dtype=m.i32)),
     "expected scalar type Long but found Int"),
    ("cross_entropy_target_range", lambda m: m.F.cross_entropy(m.T.ones(2, 3), m.T.tensor([9, 9])),
     "Target 9 is out of bounds."),
    ("cross_entropy_batch", lambda m: m.F.cross_entropy(m.T.ones(2, 3), m.T.tensor([1, 1, 1])),
     "Expected input batch_size (2) to match target batch_size (3)."),
    ("nll_loss_batch", lambda m: m.F.nll_loss(m.T.ones(2, 3), m.T.tensor([0, 1, 2])),
     "Expected input batch_size (2) to match target batch_size (3)."),
    ("nll_loss_float_target", lambda m: m.F.nll_loss(m.T.ones(2, 3), m.T.ones(2)),
     "expected scalar type Long but found Float"),
    ("bce_logits_shapes", lambda m: m.F.binary_cross_entropy_with_logits(m.T.ones(2), m.T.ones(3)),
     "must be the same as input size"),
    ("CrossEntropyLoss_batch", lambda m: m.nn.CrossEntropyLoss()(m.T.ones(2, 3), m.T.tensor([1, 1, 1])),
     "Expected input batch_size (2) to match target batch_size (3)."),
    # ---- optim
    ("SGD_of_ints", lambda m: _sgd(m, [1, 2]), "optimizer can only optimize Tensors, but one of the params is int"),
    ("SGD_of_a_tensor", lambda m: _sgd(m, _leaf(m)),
     "params argument given to the optimizer should be an iterable of Tensors or dicts, but got"),
    ("SGD_empty", lambda m: _sgd(m, []), "optimizer got an empty parameter list"),
    ("SGD_lr", lambda m: _sgd(m, [_leaf(m)], lr=-1), "Invalid learning rate: -1"),
    ("SGD_non_leaf", lambda m: _sgd(m, [_leaf(m) * 2]), "can't optimize a non-leaf Tensor"),
    ("SGD_nesterov", lambda m: _sgd(m, [_leaf(m)], nesterov=True),
     "Nesterov momentum requires a momentum and zero dampening"),
    ("Adam_betas", lambda m: m.optim.Adam([_leaf(m)], betas=(2, 0.9)), "Invalid beta parameter at index 0: 2"),
    ("StepLR_of_int", lambda m: m.sched.StepLR(1, 2), "int is not an Optimizer"),
    ("SGD_state_dict_groups", lambda m: _sgd(m, [_leaf(m)]).load_state_dict({"state": {}, "param_groups": []}),
     "loaded state dict has a different number of parameter groups"),
    # ---- autograd
    ("backward_twice", _backward_twice, "Trying to backward through the graph a second time"),
    ("backward_twice_says_retain_graph", _backward_twice, "Specify retain_graph=True"),
    ("backward_not_scalar", lambda m: (_leaf(m) * 2).backward(),
     "grad can be implicitly created only for scalar outputs"),
    ("backward_no_grad", lambda m: m.T.ones(2).sum().backward(),
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("backward_made_under_no_grad", _backward_under_no_grad,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("backward_gradient_shape", lambda m: _leaf(m).exp().backward(m.T.ones(3)),
     "Mismatch in shape: grad_output[0] has a shape of"),
    ("leaf_in_place", lambda m: _leaf(m).add_(1), "a leaf Variable that requires grad is being used in an in-place "
                                                 "operation."),
    ("saved_tensor_changed_in_place", _saved_then_changed,
     "one of the variables needed for gradient computation has been modified by an inplace operation"),
    ("hook_without_grad", lambda m: m.T.ones(2).register_hook(lambda g: g),
     "cannot register a hook on a tensor that doesn't require gradient"),
    # ---- files
    ("load_missing", lambda m: m.T.load("/nonexistent/genesis-errors/x.pt"), "[Errno 2] No such file or directory"),
    ("load_folder", lambda m: m.T.load("/"), "[Errno 21] Is a directory"),
]


def _raised(fn, m):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(BaseException) as info:
            fn(m)
    return info.value


def assert_clean(exc):
    """The message speaks Python: no pybind11 internals, C++ names or printed tensor values."""
    text = str(exc)
    for word in FORBIDDEN:
        assert word not in text, f"{type(exc).__name__}: {text}"
    assert not PRINTED_TENSOR.search(text), f"{type(exc).__name__}: {text}"
    assert len(text) < 600, text


def test_the_list_is_long_enough():
    assert len(CASES) >= 40 and len({name for name, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("fn,phrase", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_same_exception_as_torch(fn, phrase):
    t = _raised(fn, TORCH)
    torch.set_grad_enabled(True)
    assert phrase in str(t), f"torch 1.13 says: {type(t).__name__}: {t}"
    g = _raised(fn, GENESIS)
    genesis.set_grad_enabled(True)
    assert type(g) is type(t), f"torch: {type(t).__name__}: {t}\ngenesis: {type(g).__name__}: {g}"
    assert phrase in str(g), f"torch: {t}\ngenesis: {g}"
    assert_clean(g)


def test_messages_never_print_tensors():
    big = genesis.ones(200, 300)
    for fn in (lambda: genesis.nn.functional.linear([1.0], big), lambda: genesis.matmul(big, "x"),
               lambda: genesis.nn.functional.linear(big, big, None, 1), lambda: big.add(big, big, big),
               lambda: genesis.where(big > 0, big, "x"), lambda: big.masked_fill(big, None),
               lambda: big.index_select(0, [1])):
        e = _raised(lambda m: fn(), None)
        assert isinstance(e, (TypeError, RuntimeError, ValueError, IndexError)), repr(e)
        assert_clean(e)


def test_modules_given_something_else_than_a_tensor_raise_type_errors():
    """torch raises TypeError from its C++ functionals and AttributeError from its Python ones; genesis TypeError."""
    for make in (lambda m: m.nn.Conv1d(1, 1, 1), lambda m: m.nn.Conv2d(1, 1, 1), lambda m: m.nn.GroupNorm(1, 2),
                 lambda m: m.nn.Linear(2, 2), lambda m: m.nn.Embedding(3, 2), lambda m: m.nn.LayerNorm(2),
                 lambda m: m.nn.Sequential(m.nn.Linear(2, 2), m.nn.ReLU())):
        for bad in ([1.0, 2.0], "x"):
            t = _raised(lambda m: make(m)(bad), TORCH)
            g = _raised(lambda m: make(m)(bad), GENESIS)
            assert type(t) in (TypeError, AttributeError) and type(g) is TypeError, (repr(t), repr(g))
            assert f"must be Tensor, not {type(bad).__name__}" in str(g), str(g)
            assert_clean(g)


@pytest.mark.parametrize("code,message,kind,phrase", [
    (1, "[add_] in-place operation on a tensor that requires grad (use NoGradGuard or detach())", RuntimeError,
     "with genesis.no_grad():"),
    (1, "[backward] trying to backward through SumBackward0 a second time; pass retain_graph=true the first time",
     RuntimeError, "Specify retain_graph=True"),
    (1, "[mul] saved tensor 'x' was freed by a backward pass (use retain_graph)", RuntimeError,
     "Specify retain_graph=True"),
    (1, "[DDP] parameter 'w' got no gradient. Pass find_unused_parameters=true when some parameters are unused",
     ValueError, "find_unused_parameters=True"),
    (4, "[distributed] rank 1 trains on cuda:0 but its group moves cuda:1 (use cuda:$LOCAL_RANK, see "
        "distributed::local_device)", RuntimeError, "genesis.distributed.get_node_local_rank()"),
    (3, "[gloo] all_reduce: GN_REDUCE_AVG of a int64 tensor (AVG is for floating dtypes; use GN_REDUCE_SUM)",
     RuntimeError, "ReduceOp.AVG of a int64 tensor"),
    (10, "[qwen] /nonexistent/folder is not a folder", NotADirectoryError, "[Errno 20] Not a directory"),
    (10, "[launch] cannot pick a free port: Address already in use", OSError, "[Errno 98]"),
    (5, "[FashionMNIST] /data/fm: missing train-images-idx3-ubyte[.gz]", FileNotFoundError,
     "[Errno 2] missing train-images-idx3-ubyte[.gz]: '/data/fm'"),
    (2, "[layer_norm] normalized_ndim 3 must be in [1, 2] for input shape (2, 4)", RuntimeError, "normalized_ndim"),
])
def test_cpp_messages_read_as_python(code, message, kind, phrase):
    """Messages shared with C++ users are reworded for Python at the binding, whatever C++ path raised them."""
    from genesis import _errors
    e = _errors.from_code(code, message)
    assert type(e) is kind and phrase in str(e), repr(e)
    assert_clean(e)


def test_unbound_methods_given_none_raise_instead_of_crashing():
    """Tensor.abs(None) (what genesis.abs(None) calls) must not reach C++ with a null tensor."""
    names = [n for n, v in vars(genesis.Tensor).items() if type(v).__name__ == "instancemethod"
             and n not in ("__init__", "__new__", "__setstate__") and not n.startswith("_pybind11_")]
    assert len(names) > 100
    for name in names:
        e = _raised(lambda m: getattr(genesis.Tensor, name)(None), None)
        assert isinstance(e, TypeError), (name, repr(e))
        assert_clean(e)


def test_genesis_errors_keep_their_code():
    with pytest.raises(RuntimeError) as e:
        genesis.zeros(2, 3) + genesis.zeros(2, 4)
    assert e.value.code == 2  # GN_ERR_SHAPE
    with pytest.raises(IndexError) as e:
        genesis.zeros(2, 3).sum(5)
    assert e.value.code == 8  # GN_ERR_INDEX
    with pytest.raises(RuntimeError) as e:
        genesis.nn.functional.linear(genesis.ones(2, 3), genesis.ones(4, 3, dtype=genesis.float64))
    assert not hasattr(e.value, "code")  # a Python-side check: no C error behind it


def test_dtype_checks_leave_valid_calls_alone():
    x = genesis.ones(2, 3, dtype=genesis.float64)
    w = genesis.ones(4, 3, dtype=genesis.float64)
    assert genesis.nn.functional.linear(x, w).dtype == genesis.float64
    assert (genesis.ones(2, 3, dtype=genesis.int64) @ genesis.ones(3, 2, dtype=genesis.int64)).dtype == genesis.int64
    with genesis.autocast("cpu", dtype=genesis.bfloat16):  # autocast mixes dtypes on purpose, as torch's
        assert genesis.nn.functional.linear(x.float(), w.to(genesis.bfloat16)).dtype == genesis.bfloat16
        assert (x.float() @ w.t().to(genesis.bfloat16)).dtype == genesis.bfloat16
    logits, probs = [[0.5, 1.0, -2.0], [3.0, 0.0, 1.0]], [[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]]  # probabilities as target
    g = genesis.nn.functional.cross_entropy(genesis.tensor(logits, dtype=genesis.float64),
                                            genesis.tensor(probs, dtype=genesis.float64))
    t = torch.nn.functional.cross_entropy(torch.tensor(logits, dtype=torch.float64),
                                          torch.tensor(probs, dtype=torch.float64))
    assert abs(g.item() - t.item()) < 1e-10


# ---------------------------------------------------------------- files: what Python's open() raises

def _open_error(path, mode):
    with pytest.raises(OSError) as info:
        open(path, mode).close()
    return info.value


def _same_os_error(g, want):
    assert type(g) is type(want), f"{type(g).__name__}: {g} (Python's open: {type(want).__name__}: {want})"
    assert g.errno == want.errno and g.filename == want.filename, (g, want)
    assert str(g) == str(want)


@pytest.fixture()
def files(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    (tmp_path / "model").mkdir()
    return types.SimpleNamespace(root=tmp_path, missing=str(tmp_path / "missing.safetensors"), folder=str(folder),
                                 no_parent=str(tmp_path / "no" / "such" / "x.safetensors"),
                                 model=str(tmp_path / "model"))


def test_reading_missing_files_and_folders(files):
    t = {"a": genesis.ones(2)}
    for fn in (genesis.load, genesis.load_file, lambda p: genesis.load(p, map_location="cpu")):
        _same_os_error(_raised(lambda m: fn(files.missing), None), _open_error(files.missing, "rb"))
        _same_os_error(_raised(lambda m: fn(files.folder), None), _open_error(files.folder, "rb"))
    for fn in (lambda p: genesis.save(t, p), lambda p: genesis.save({"x": [t["a"], 1]}, p),
               lambda p: genesis.save_file(t, p)):
        _same_os_error(_raised(lambda m: fn(files.no_parent), None), _open_error(files.no_parent, "wb"))
    assert isinstance(_raised(lambda m: genesis.save(t, files.folder), None), IsADirectoryError)
    e = _raised(lambda m: torch.load(files.missing), None)  # torch agrees on reads
    assert type(e) is FileNotFoundError and e.errno == errno.ENOENT


def test_data_models_and_tokenizers_from_missing_folders(files):
    import genesis.models as M
    missing = os.path.join(files.missing, "model")
    for fn in (M.QwenForCausalLM.from_pretrained, M.Tokenizer.from_pretrained):
        e = _raised(lambda m: fn(missing), None)
        assert isinstance(e, FileNotFoundError) and e.errno == errno.ENOENT, repr(e)
        assert e.filename.startswith(missing), e.filename
        e = _raised(lambda m: fn(files.model), None)  # a folder without the model's files
        assert isinstance(e, FileNotFoundError) and e.errno == errno.ENOENT, repr(e)
        assert_clean(e)
    e = _raised(lambda m: M.read_chat_jsonl(files.missing), None)
    assert isinstance(e, FileNotFoundError) and e.filename == files.missing, repr(e)
    for root in (missing, files.model):  # Fashion-MNIST's IDX files: no folder, a folder without them
        e = _raised(lambda m: genesis.data.fashion_mnist(root), None)
        assert isinstance(e, FileNotFoundError) and e.errno == errno.ENOENT and e.filename == root, repr(e)
    e = _raised(lambda m: M.train_tokenizer([files.missing], str(files.root / "out")), None)
    assert isinstance(e, FileNotFoundError) and e.filename == files.missing, repr(e)


def test_corrupt_files_are_os_errors(files):
    bad = files.root / "bad.safetensors"
    bad.write_bytes(b"garbage garbage")
    e = _raised(lambda m: genesis.load(str(bad)), None)
    assert type(e) is OSError and "bad.safetensors" in str(e), repr(e)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files whatever their mode")
def test_unreadable_files_are_permission_errors(files):
    locked = files.root / "locked.safetensors"
    genesis.save({"a": genesis.ones(2)}, str(locked))
    locked.chmod(0)
    _same_os_error(_raised(lambda m: genesis.load(str(locked)), None), _open_error(str(locked), "rb"))
