"""Tensor functions composed in Python (genesis/functional.py, genesis/linalg.py) against PyTorch 1.13:
einsum, repeat, roll, diag, products, norms, // and %, transcendental composites, in-place forms,
creation conveniences and the default dtype; values in float64 to 1e-10, gradients through
backward to 1e-7, integer results exactly, and the exception types torch raises for bad input."""
import math

import numpy as np
import pytest
import torch

import genesis
from conftest import close, to_torch

TF = torch.nn.functional


def _data(spec, rng):
    """A float64 array for an input spec: a shape, or (shape, domain)."""
    shape, domain = spec if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[1], str) else (spec, "any")
    if domain == "any":
        return rng.standard_normal(shape)
    if domain == "pos":
        return rng.uniform(0.5, 2.0, shape)
    if domain == "unit":
        return rng.uniform(-0.95, 0.95, shape)
    if domain == "gt1":
        return rng.uniform(1.05, 4.0, shape)
    if domain == "wide":
        return rng.standard_normal(shape) * 4
    if domain == "away0":  # |x| in [0.5, 2]: safe divisors
        return rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    raise ValueError(domain)


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(fn_g, fn_t, specs, grad=True, seed=0):
    """fn_g on genesis inputs equals fn_t on torch inputs (values to 1e-10), and so do the gradients (1e-7)
    of a random weighting of the outputs through backward."""
    rng = np.random.default_rng(seed)
    arrays = [_data(s, rng) for s in specs]
    gs = [genesis.tensor(a, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    outs_g, outs_t = _outputs(fn_g(*gs)), _outputs(fn_t(*ts))
    assert len(outs_g) == len(outs_t)
    for g, t in zip(outs_g, outs_t):
        assert g.dtype == genesis.float64, g.dtype
        close(g, t)
    if not grad:
        return
    weights = [rng.standard_normal(tuple(t.shape)) for t in outs_t]
    loss_g = sum((g * genesis.tensor(w)).sum() for g, w in zip(outs_g, weights))
    loss_t = sum((t * torch.tensor(w)).sum() for t, w in zip(outs_t, weights))
    loss_g.backward()
    loss_t.backward()
    for g, t in zip(gs, ts):
        want = t.grad if t.grad is not None else torch.zeros_like(t)
        got = g.grad if g.grad is not None else genesis.zeros(*g.shape, dtype=genesis.float64)
        close(got, want, rtol=1e-7, atol=1e-7)


# name: (genesis fn, torch fn, input specs)
CASES = {
    # ---- einsum
    "einsum_matmul": (lambda a, b: genesis.einsum("ij,jk->ik", a, b), lambda a, b: torch.einsum("ij,jk->ik", a, b),
                      [(3, 4), (4, 5)]),
    "einsum_implicit": (lambda a, b: genesis.einsum("ij,jk", a, b), lambda a, b: torch.einsum("ij,jk", a, b),
                        [(3, 4), (4, 5)]),
    "einsum_batched": (lambda a, b: genesis.einsum("bij,bjk->bik", a, b),
                       lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(2, 3, 4), (2, 4, 5)]),
    "einsum_batch_broadcast": (lambda a, b: genesis.einsum("bij,bjk->bik", a, b),
                               lambda a, b: torch.einsum("bij,bjk->bik", a, b), [(1, 3, 4), (3, 4, 2)]),
    "einsum_size1_label": (lambda a, b: genesis.einsum("ij,kj->ik", a, b), lambda a, b: torch.einsum("ij,kj->ik", a, b),
                           [(2, 1), (3, 4)]),
    "einsum_diagonal": (lambda a: genesis.einsum("ii->i", a), lambda a: torch.einsum("ii->i", a), [(4, 4)]),
    "einsum_trace": (lambda a: genesis.einsum("ii", a), lambda a: torch.einsum("ii", a), [(4, 4)]),
    "einsum_diag_3d": (lambda a: genesis.einsum("iji->j", a), lambda a: torch.einsum("iji->j", a), [(3, 2, 3)]),
    "einsum_outer": (lambda a, b: genesis.einsum("i,j->ij", a, b), lambda a, b: torch.einsum("i,j->ij", a, b),
                     [(3,), (4,)]),
    "einsum_dot": (lambda a, b: genesis.einsum("i,i", a, b), lambda a, b: torch.einsum("i,i", a, b), [(5,), (5,)]),
    "einsum_sum_all": (lambda a: genesis.einsum("ijk->", a), lambda a: torch.einsum("ijk->", a), [(2, 3, 4)]),
    "einsum_permute": (lambda a: genesis.einsum("ijk->kij", a), lambda a: torch.einsum("ijk->kij", a), [(2, 3, 4)]),
    "einsum_hadamard": (lambda a, b: genesis.einsum("ij,ij->ij", a, b), lambda a, b: torch.einsum("ij,ij->ij", a, b),
                        [(3, 4), (3, 4)]),
    "einsum_bilinear": (lambda a, w, b: genesis.einsum("bn,anm,bm->ba", a, w, b),
                        lambda a, w, b: torch.einsum("bn,anm,bm->ba", a, w, b), [(2, 3), (4, 3, 5), (2, 5)]),
    "einsum_ellipsis": (lambda a, b: genesis.einsum("...ij,...jk", a, b),
                        lambda a, b: torch.einsum("...ij,...jk", a, b), [(2, 1, 3, 4), (5, 4, 2)]),
    "einsum_ellipsis_middle": (lambda a: genesis.einsum("i...j->j...i", a), lambda a: torch.einsum("i...j->j...i", a),
                               [(2, 3, 4, 5)]),
    "einsum_ellipsis_summed": (lambda a: genesis.einsum("...ij->ij", a), lambda a: torch.einsum("...ij->ij", a),
                               [(4, 2, 3)]),
    "einsum_upper_implicit": (lambda a, b: genesis.einsum("Ba,aC", a, b), lambda a, b: torch.einsum("Ba,aC", a, b),
                              [(2, 3), (3, 4)]),
    "einsum_operand_only_sum": (lambda a, b: genesis.einsum("ij,k->i", a, b),
                                lambda a, b: torch.einsum("ij,k->i", a, b), [(3, 4), (5,)]),
    "einsum_list_operands": (lambda a, b: genesis.einsum("i, j -> ij", [a, b]),
                             lambda a, b: torch.einsum("i, j -> ij", [a, b]), [(2,), (3,)]),
    "einsum_sublist": (lambda a, b: genesis.einsum(a, [0, 1], b, [1, 2], [0, 2]),
                       lambda a, b: torch.einsum(a, [0, 1], b, [1, 2], [0, 2]), [(3, 4), (4, 2)]),
    "einsum_attention": (lambda q, k, v: genesis.einsum("bhqd,bhkd,bhkv->bhqv", q, k, v),
                         lambda q, k, v: torch.einsum("bhqd,bhkd,bhkv->bhqv", q, k, v),
                         [(2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 3)]),
    # ---- repeat, roll, diagonals
    "repeat": (lambda a: a.repeat(2, 1, 3), lambda a: a.repeat(2, 1, 3), [(2, 3)]),
    "repeat_same_dims": (lambda a: a.repeat((3, 2)), lambda a: a.repeat((3, 2)), [(2, 3)]),
    "repeat_interleave_int": (lambda a: a.repeat_interleave(3, -1), lambda a: a.repeat_interleave(3, -1), [(2, 3)]),
    "repeat_interleave_flat": (lambda a: genesis.repeat_interleave(a, 2), lambda a: torch.repeat_interleave(a, 2),
                               [(2, 3)]),
    "repeat_interleave_tensor": (lambda a: a.repeat_interleave(genesis.tensor([2, 0, 1]), dim=1),
                                 lambda a: a.repeat_interleave(torch.tensor([2, 0, 1]), dim=1), [(2, 3)]),
    "repeat_interleave_0d": (lambda a: a.repeat_interleave(genesis.tensor(2), 0),
                             lambda a: a.repeat_interleave(torch.tensor(2), 0), [(2, 3)]),
    "roll_dims": (lambda a: a.roll((1, -2), (0, -1)), lambda a: a.roll((1, -2), (0, -1)), [(3, 4)]),
    "roll_flat": (lambda a: genesis.roll(a, 5), lambda a: torch.roll(a, 5), [(3, 4)]),
    "roll_big_shift": (lambda a: a.roll(-7, 1), lambda a: a.roll(-7, 1), [(2, 3, 2)]),
    "diag_embed": (lambda a: a.diag(), lambda a: a.diag(), [(4,)]),
    "diag_embed_pos": (lambda a: genesis.diag(a, 2), lambda a: torch.diag(a, 2), [(3,)]),
    "diag_embed_neg": (lambda a: genesis.diag(a, -1), lambda a: torch.diag(a, -1), [(3,)]),
    "diag_extract": (lambda a: a.diag(1) * 1 + a.diag(-2).sum(), lambda a: a.diag(1) * 1 + a.diag(-2).sum(),
                     [(4, 5)]),
    "diagonal_dims": (lambda a: a.diagonal(1, -1, 0), lambda a: a.diagonal(1, -1, 0), [(4, 2, 5)]),
    "diagonal_neg_offset": (lambda a: genesis.diagonal(a, -1, 1, 2), lambda a: torch.diagonal(a, -1, 1, 2),
                            [(2, 4, 3)]),
    "diagonal_past_end": (lambda a: a.diagonal(7), lambda a: a.diagonal(7), [(3, 4)]),
    "trace": (lambda a: a.trace(), lambda a: a.trace(), [(3, 5)]),
    "tril_triu": (lambda a: a.tril(1) + genesis.triu(a, diagonal=-1) + genesis.tril(a, -2),
                  lambda a: a.tril(1) + torch.triu(a, diagonal=-1) + torch.tril(a, -2), [(2, 3, 4)]),
    "expand_as": (lambda a, b: a.expand_as(b) * b, lambda a, b: a.expand_as(b) * b, [(3, 1), (2, 3, 4)]),
    "flip_function": (lambda a: genesis.flip(a, (0, -1)), lambda a: torch.flip(a, (0, -1)), [(2, 3, 4)]),
    "clip": (lambda a, b: genesis.clip(a, b, b + 0.5), lambda a, b: torch.clip(a, b, b + 0.5), [(3, 4), (4,)]),
    # ---- products
    "outer": (lambda a, b: a.outer(b), lambda a, b: a.outer(b), [(3,), (4,)]),
    "ger": (lambda a, b: genesis.ger(a, b), lambda a, b: torch.ger(a, b), [(2,), (3,)]),
    "dot": (lambda a, b: genesis.dot(a, b), lambda a, b: torch.dot(a, b), [(5,), (5,)]),
    "mm_mv": (lambda a, b, v: genesis.mm(a, b).sum(0) + a.mv(v), lambda a, b, v: torch.mm(a, b).sum(0) + a.mv(v),
              [(3, 3), (3, 3), (3,)]),
    "bmm_method": (lambda a, b: a.bmm(b), lambda a, b: a.bmm(b), [(2, 3, 4), (2, 4, 5)]),
    "addmm": (lambda c, a, b: genesis.addmm(c, a, b, beta=0.5, alpha=-2),
              lambda c, a, b: torch.addmm(c, a, b, beta=0.5, alpha=-2), [(4,), (3, 2), (2, 4)]),
    "addmm_beta0": (lambda c, a, b: c.addmm(a, b, beta=0), lambda c, a, b: c.addmm(a, b, beta=0),
                    [(3, 4), (3, 2), (2, 4)]),
    "addmv": (lambda c, a, v: genesis.addmv(c, a, v, alpha=3), lambda c, a, v: torch.addmv(c, a, v, alpha=3),
              [(3,), (3, 4), (4,)]),
    "addr": (lambda c, a, b: genesis.addr(c, a, b, beta=2), lambda c, a, b: torch.addr(c, a, b, beta=2),
             [(1, 4), (3,), (4,)]),
    "baddbmm": (lambda c, a, b: genesis.baddbmm(c, a, b, beta=0.25, alpha=2),
                lambda c, a, b: torch.baddbmm(c, a, b, beta=0.25, alpha=2), [(3, 1), (2, 3, 4), (2, 4, 1)]),
    "addbmm": (lambda c, a, b: c.addbmm(a, b), lambda c, a, b: c.addbmm(a, b), [(3, 2), (4, 3, 5), (4, 5, 2)]),
    "cdist_2": (lambda a, b: genesis.cdist(a, b), lambda a, b: torch.cdist(a, b), [(4, 3), (5, 3)]),
    "cdist_batched_1": (lambda a, b: genesis.cdist(a, b, 1), lambda a, b: torch.cdist(a, b, 1), [(2, 4, 3), (5, 3)]),
    "cdist_inf": (lambda a, b: genesis.cdist(a, b, math.inf), lambda a, b: torch.cdist(a, b, math.inf),
                  [(3, 2), (4, 2)]),
    "cdist_3": (lambda a, b: genesis.cdist(a, b, 3), lambda a, b: torch.cdist(a, b, 3), [(3, 2), (4, 2)]),
    # ---- elementwise
    "clamp_min_tensor": (lambda a, b: a.clamp_min(b), lambda a, b: a.clamp_min(b), [(3, 4), (4,)]),
    "clamp_max_number": (lambda a: genesis.clamp_max(a, 0.2), lambda a: torch.clamp_max(a, 0.2), [(3, 4)]),
    "clamp_tensors": (lambda a, lo, hi: a.clamp(lo, hi + 1), lambda a, lo, hi: a.clamp(lo, hi + 1),
                      [(3, 4), (4,), (3, 1)]),
    "lerp_small_weight": (lambda a, b: genesis.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3), [(5,), (5,)]),
    "lerp_large_weight": (lambda a, b: a.lerp(b, 0.8), lambda a, b: a.lerp(b, 0.8), [(2, 3), (3,)]),
    "lerp_tensor_weight": (lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w), [(6,), (6,), ((6,), "pos")]),
    "addcmul": (lambda a, b, c: a.addcmul(b, c, value=-0.5), lambda a, b, c: a.addcmul(b, c, value=-0.5),
                [(3, 4), (4,), (3, 1)]),
    "addcdiv": (lambda a, b, c: genesis.addcdiv(a, b, c, value=2), lambda a, b, c: torch.addcdiv(a, b, c, value=2),
                [(3, 4), (3, 4), ((4,), "away0")]),
    "logaddexp": (lambda a, b: a.logaddexp(b), lambda a, b: a.logaddexp(b), [((3, 4), "wide"), ((4,), "wide")]),
    "logaddexp2": (lambda a, b: genesis.logaddexp2(a, b), lambda a, b: torch.logaddexp2(a, b),
                   [((5,), "wide"), ((5,), "wide")]),
    "hypot": (lambda a, b: a.hypot(b), lambda a, b: a.hypot(b), [(3, 4), (4,)]),
    "atan2": (lambda a, b: genesis.atan2(a, b), lambda a, b: torch.atan2(a, b), [(4, 5), (4, 5)]),
    "atan2_broadcast": (lambda a, b: a.atan2(b), lambda a, b: a.atan2(b), [(3, 1), (4,)]),
    "atan": (lambda a: a.atan(), lambda a: a.atan(), [((40,), "wide")]),
    "asin": (lambda a: a.asin(), lambda a: a.asin(), [((20,), "unit")]),
    "acos": (lambda a: genesis.acos(a), lambda a: torch.acos(a), [((20,), "unit")]),
    "sinh_cosh_tan": (lambda a: a.sinh() + a.cosh() * a.tan(), lambda a: a.sinh() + a.cosh() * a.tan(),
                      [((20,), "unit")]),
    "asinh": (lambda a: a.asinh(), lambda a: a.asinh(), [((30,), "wide")]),
    "acosh": (lambda a: a.acosh(), lambda a: a.acosh(), [((20,), "gt1")]),
    "atanh": (lambda a: genesis.atanh(a), lambda a: torch.atanh(a), [((20,), "unit")]),
    "arc_aliases": (lambda a: a.arcsin() + a.arccos() + a.arctan() + a.arcsinh() + a.arctanh(),
                    lambda a: a.arcsin() + a.arccos() + a.arctan() + a.arcsinh() + a.arctanh(), [((10,), "unit")]),
    "log2_log10_exp2": (lambda a: a.log2() + a.log10() + a.exp2(), lambda a: a.log2() + a.log10() + a.exp2(),
                        [((10,), "pos")]),
    "trunc_frac": (lambda a: a.trunc() + a.frac() * 2, lambda a: a.trunc() + a.frac() * 2, [((10,), "wide")]),
    "remainder_float": (lambda a, b: a % b, lambda a, b: a % b, [((3, 4), "wide"), ((4,), "away0")]),
    "remainder_number": (lambda a: genesis.remainder(a, -1.5), lambda a: torch.remainder(a, -1.5), [((8,), "wide")]),
    "fmod_float": (lambda a, b: a.fmod(b), lambda a, b: a.fmod(b), [((3, 4), "wide"), ((3, 1), "away0")]),
    "nan_to_num": (lambda a: a.nan_to_num(1.0, 2.0, -2.0), lambda a: a.nan_to_num(1.0, 2.0, -2.0), [(3, 4)]),
    # ---- reductions and norms
    "std_mean": (lambda a: genesis.std_mean(a, 1), lambda a: torch.std_mean(a, 1), [(3, 4)]),
    "var_mean": (lambda a: genesis.var_mean(a, (0, -1), unbiased=False, keepdim=True),
                 lambda a: torch.var_mean(a, (0, -1), unbiased=False, keepdim=True), [(2, 3, 4)]),
    "std_mean_correction": (lambda a: genesis.std_mean(a, dim=0, correction=0),
                            lambda a: torch.std_mean(a, dim=0, correction=0), [(5, 2)]),
    "norm_default": (lambda a: a.norm(), lambda a: a.norm(), [(3, 4)]),
    "norm_p_dim": (lambda a: genesis.norm(a, 3, -1, True), lambda a: torch.norm(a, 3, -1, True), [(3, 4)]),
    "norm_fro_dims": (lambda a: a.norm("fro", (0, 2)), lambda a: a.norm("fro", (0, 2)), [(2, 3, 4)]),
    "norm_inf": (lambda a: a.norm(math.inf, 1), lambda a: a.norm(math.inf, 1), [(3, 4)]),
    "linalg_norm_default": (lambda a: genesis.linalg.norm(a), lambda a: torch.linalg.norm(a), [(2, 3, 4)]),
    "linalg_norm_vector": (lambda a: genesis.linalg.norm(a, 0.5), lambda a: torch.linalg.norm(a, 0.5), [(6,)]),
    "linalg_norm_matrix": (lambda a: genesis.linalg.norm(a, -math.inf), lambda a: torch.linalg.norm(a, -math.inf),
                           [(3, 4)]),
    "linalg_norm_dim": (lambda a: genesis.linalg.norm(a, dim=1, keepdim=True),
                        lambda a: torch.linalg.norm(a, dim=1, keepdim=True), [(3, 4)]),
    "matrix_norm_fro": (lambda a: genesis.linalg.matrix_norm(a), lambda a: torch.linalg.matrix_norm(a), [(2, 3, 4)]),
    "matrix_norm_1": (lambda a: genesis.linalg.matrix_norm(a, 1, (0, 2)),
                      lambda a: torch.linalg.matrix_norm(a, 1, (0, 2)), [(3, 2, 4)]),
    "matrix_norm_minus1_keepdim": (lambda a: genesis.linalg.matrix_norm(a, -1, keepdim=True),
                                   lambda a: torch.linalg.matrix_norm(a, -1, keepdim=True), [(2, 3, 4)]),
    "matrix_norm_inf": (lambda a: genesis.linalg.matrix_norm(a, math.inf, (-1, 0)),
                        lambda a: torch.linalg.matrix_norm(a, math.inf, (-1, 0)), [(3, 2, 4)]),
    # ---- shapes and views
    "broadcast_to": (lambda a: genesis.broadcast_to(a, (2, -1, 4)), lambda a: torch.broadcast_to(a, (2, -1, 4)),
                     [(3, 1)]),
    "broadcast_tensors": (lambda a, b: genesis.broadcast_tensors(a, b), lambda a, b: torch.broadcast_tensors(a, b),
                          [(3, 1), (4,)]),
    "movedim": (lambda a: a.movedim((0, -1), (2, 0)), lambda a: a.movedim((0, -1), (2, 0)), [(2, 3, 4, 5)]),
    "moveaxis": (lambda a: genesis.moveaxis(a, 0, -1), lambda a: torch.moveaxis(a, 0, -1), [(2, 3, 4)]),
    "swapdims": (lambda a: genesis.swapdims(a, 0, 2), lambda a: torch.swapdims(a, 0, 2), [(2, 3, 4)]),
    "atleast": (lambda a, b, c: genesis.atleast_3d(a, b, c) + genesis.atleast_2d([a, b]) + (genesis.atleast_1d(a),),
                lambda a, b, c: torch.atleast_3d(a, b, c) + torch.atleast_2d([a, b]) + (torch.atleast_1d(a),),
                [(), (3,), (2, 3)]),
    "stacks": (lambda a, b: (genesis.hstack([a, b]), genesis.vstack([a, b]), genesis.dstack([a, b]),
                             genesis.column_stack([a, b]), genesis.row_stack((a, b))),
               lambda a, b: (torch.hstack([a, b]), torch.vstack([a, b]), torch.dstack([a, b]),
                             torch.column_stack([a, b]), torch.row_stack((a, b))), [(2, 3), (2, 3)]),
    "stacks_1d": (lambda a, b: (genesis.hstack([a, b]), genesis.vstack([a, b]), genesis.column_stack([a, b])),
                  lambda a, b: (torch.hstack([a, b]), torch.vstack([a, b]), torch.column_stack([a, b])),
                  [(3,), (3,)]),
    "rot90": (lambda a: [a.rot90(k, (0, -1)) for k in (-1, 0, 1, 2, 3, 5)],
              lambda a: [a.rot90(k, (0, -1)) for k in (-1, 0, 1, 2, 3, 5)], [(2, 3, 4)]),
    "flips": (lambda a: (genesis.fliplr(a), a.flipud()), lambda a: (torch.fliplr(a), a.flipud()), [(2, 3)]),
    "meshgrid_ij": (lambda a, b, c: genesis.meshgrid(a, b, c, indexing="ij"),
                    lambda a, b, c: torch.meshgrid(a, b, c, indexing="ij"), [(2,), (3,), (4,)]),
    "meshgrid_xy": (lambda a, b: genesis.meshgrid([a, b], indexing="xy"),
                    lambda a, b: torch.meshgrid([a, b], indexing="xy"), [(2,), (3,)]),
    "cartesian_prod": (lambda a, b: genesis.cartesian_prod(a, b), lambda a, b: torch.cartesian_prod(a, b),
                       [(2,), (3,)]),
    "where_method": (lambda a, b: a.where(a > 0, b), lambda a, b: a.where(a > 0, b), [(3, 4), (4,)]),
}


# values only: torch has no gradient for these
VALUE_CASES = {
    "rmod_number": (lambda a: 2.5 % a, lambda a: 2.5 % a, [((6,), "away0")]),
    "floor_divide_float": (lambda a, b: a // b, lambda a, b: a // b, [((3, 4), "wide"), ((4,), "away0")]),
    "where_single": (lambda a: genesis.where(a > 0), lambda a: torch.where(a > 0), [(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_and_gradients_match_torch(name):
    fn_g, fn_t, specs = CASES[name]
    check(fn_g, fn_t, specs)


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_values_match_torch(name):
    fn_g, fn_t, specs = VALUE_CASES[name]
    rng = np.random.default_rng(2)
    arrays = [_data(s, rng) for s in specs]
    for g, t in zip(_outputs(fn_g(*[genesis.tensor(a) for a in arrays])),
                    _outputs(fn_t(*[torch.tensor(a) for a in arrays]))):
        assert str(g.dtype) == str(t.dtype).replace("torch", "genesis")
        close(g, t)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, 0, math.inf, -math.inf])
def test_vector_norm_orders_with_zeros(shape, ord):
    """Every ord over every dim set, with exact zeros in the input (torch's gradient there is 0, not NaN)."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal(shape)
    a.reshape(-1)[::3] = 0.0
    dims = [None, -1, 0] + ([(0, -1)] if len(shape) > 1 else [])
    for dim in dims:
        for keepdim in (False, True):
            x, t = genesis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
            y = genesis.linalg.vector_norm(x, ord, dim, keepdim)
            z = torch.linalg.vector_norm(t, ord, dim, keepdim)
            close(y, z)
            w = rng.standard_normal(tuple(z.shape))
            (y * genesis.tensor(w)).sum().backward()
            (z * torch.tensor(w)).sum().backward()
            close(x.grad, t.grad if t.grad is not None else torch.zeros_like(t), rtol=1e-7, atol=1e-7)


def test_norms_of_zero_and_tied_inputs():
    x, t = genesis.zeros(4, dtype=genesis.float64, requires_grad=True), torch.zeros(4, dtype=torch.float64,
                                                                                   requires_grad=True)
    genesis.linalg.vector_norm(x).backward()
    torch.linalg.vector_norm(t).backward()
    close(x.grad, t.grad)
    a = np.array([1.0, -3.0, 3.0, 2.0])
    x, t = genesis.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    genesis.linalg.vector_norm(x, math.inf).backward()
    torch.linalg.vector_norm(t, math.inf).backward()
    close(x.grad, t.grad)  # shared between the tied maxima
    d = genesis.linalg.vector_norm(genesis.ones(3, 2, dtype=genesis.float64), 2, dtype=genesis.float64)
    assert d.dtype == genesis.float64 and abs(d.item() - math.sqrt(6)) < 1e-15
    assert genesis.linalg.vector_norm(genesis.ones(2, 3), dtype=genesis.float64).dtype == genesis.float64
    close(genesis.linalg.vector_norm(genesis.ones(0, 3, dtype=genesis.float64), math.inf, 1),
          torch.linalg.vector_norm(torch.ones(0, 3, dtype=torch.float64), math.inf, 1))


def test_transcendental_composites_at_extremes():
    a = np.array([-1e300, -1e12, -7.5, -1.0, -1e-12, 0.0, 1e-200, 1e-9, 0.3, 1.0, 3.0, 1e9, 1e15, 1e300,
                  math.inf, -math.inf, math.nan])
    x, t = genesis.tensor(a), torch.tensor(a)
    for name in ("atan", "asinh", "sinh", "cosh", "atanh", "asin", "acos", "acosh", "log2", "log10", "trunc"):
        with np.errstate(all="ignore"):
            g, want = getattr(x, name)(), getattr(t, name)()
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-12, atol=0, err_msg=name)
    # atan2 in every quadrant and on the axes (no signed zeros)
    ys = np.array([1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.0, 1e-300, math.inf, 3.0])
    xs = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 0.0, 0.0, 0.0, -1.0, 2.0, math.inf])
    np.testing.assert_allclose(genesis.atan2(genesis.tensor(ys), genesis.tensor(xs)).numpy(),
                               torch.atan2(torch.tensor(ys), torch.tensor(xs)).numpy(), rtol=1e-15, atol=0)
    # float32 and integer inputs: float32 results as torch
    for name in ("atan", "asin", "sinh", "asinh", "atanh"):
        v = getattr(genesis.tensor([0.25, -0.5]), name)()
        assert v.dtype == genesis.float32
        np.testing.assert_allclose(v.numpy(), getattr(torch.tensor([0.25, -0.5]), name)().numpy(), rtol=1e-6)
        assert getattr(genesis.tensor([0, 1]), name)().dtype == genesis.float32


def test_composites_pass_finite_difference_gradcheck():
    rng = np.random.default_rng(3)
    a = genesis.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = genesis.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    u = genesis.tensor(rng.uniform(-0.9, 0.9, (5,)), requires_grad=True)
    assert genesis.gradcheck(lambda x, y: genesis.einsum("ij,jk->ki", x, y), [a, b])
    assert genesis.gradcheck(lambda x: genesis.atan2(x, x.flip(0) + 0.1).sum() + x.asin().sum(), [u])
    assert genesis.gradcheck(lambda x: x.roll(1, 1).repeat(2, 1).diagonal().sum(), [a])
    assert genesis.gradcheck(lambda x: genesis.linalg.vector_norm(x, 3, 0), [a])


# ------------------------------------------------------------------------------------------------ // and %

INT_A = [7, -7, 7, -7, 0, 13, -13, 1, -1, 2 ** 40 + 3, -(2 ** 50) - 1, 9007199254740991]
INT_B = [3, 3, -3, -3, 5, -4, 4, 7, -7, 12345, 987654321, 2]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_floor_division_and_remainder_follow_torch(dtype):
    n = len(INT_A) if dtype == "int64" else 9
    a, b = INT_A[:n], INT_B[:n]
    g_a, g_b = genesis.tensor(a, dtype=getattr(genesis, dtype)), genesis.tensor(b, dtype=getattr(genesis, dtype))
    t_a, t_b = torch.tensor(a, dtype=getattr(torch, dtype)), torch.tensor(b, dtype=getattr(torch, dtype))
    pairs = [
        (g_a // g_b, t_a // t_b), (g_a % g_b, t_a % t_b), (genesis.fmod(g_a, g_b), torch.fmod(t_a, t_b)),
        (g_a.floor_divide(g_b), t_a.floor_divide(t_b)), (g_a.remainder(g_b), t_a.remainder(t_b)),
        (g_a // 3, t_a // 3), (g_a % -4, t_a % -4), (g_a.fmod(-4), t_a.fmod(-4)), (17 // g_b, 17 // t_b),
        (-17 % g_b, -17 % t_b), (genesis.floor_divide(5, g_b), torch.floor_divide(5, t_b)),
        (genesis.remainder(-5, g_b), torch.remainder(-5, t_b)),
    ]
    for g, t in pairs:
        assert str(g.dtype) == str(t.dtype).replace("torch", "genesis")
        assert g.tolist() == t.tolist()


def test_floor_division_promotes_as_torch():
    i64, i32 = genesis.tensor([5, -5]), genesis.tensor([5, -5], dtype=genesis.int32)
    assert (i64 // i32).dtype == genesis.int64 and (i32 // 2).dtype == genesis.int32
    assert (i64 // 2.5).dtype == genesis.float32 and (i64 // 2.5).tolist() == [2.0, -2.0]
    assert (i64 % 2.5).tolist() == [0.0, 0.0] and (genesis.tensor([5, -6]) % 2.5).tolist() == [0.0, 1.5]
    assert (i64 // genesis.tensor([2.0])).dtype == genesis.float32
    assert (genesis.tensor([5], dtype=genesis.uint8) // genesis.tensor([2], dtype=genesis.uint8)).tolist() == [2]
    assert (genesis.tensor([5]) // True).tolist() == [5]
    assert (2.5 // genesis.tensor([2.0, -2.0])).tolist() == (2.5 // torch.tensor([2.0, -2.0])).tolist()


def test_float_floor_division_and_remainder_follow_torch():
    rng = np.random.default_rng(4)
    a = np.concatenate([rng.standard_normal(40) * 10, [7.0, -7.0, 7.5, -7.5, 0.0, 1.0, -1.0, 6.0, -6.0, 1e-300]])
    b = np.concatenate([rng.standard_normal(40), [2.0, 2.0, -2.5, -2.5, 3.0, 0.1, 0.1, 3.0, -3.0, 3.0]])
    for dtype in (np.float64, np.float32):
        ga, gb = genesis.tensor(a.astype(dtype)), genesis.tensor(b.astype(dtype))
        ta, tb = torch.tensor(a.astype(dtype)), torch.tensor(b.astype(dtype))
        tol = 1e-12 if dtype == np.float64 else 1e-5
        for g, t in [(ga // gb, ta // tb), (ga % gb, ta % tb), (ga.fmod(gb), ta.fmod(tb)), (ga // 0.75, ta // 0.75),
                     (ga % -0.75, ta % -0.75), (3.5 // gb, 3.5 // tb), (3.5 % gb, 3.5 % tb)]:
            assert str(g.dtype) == str(t.dtype).replace("torch", "genesis")
            np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=tol, atol=tol)


def test_float_division_edge_cases_follow_torch():
    a = torch.tensor([1.0, -1.0, 0.0, math.inf, -math.inf, math.nan, 5.0], dtype=torch.float64)
    x = genesis.tensor(a.numpy())
    for divisor in (0.0, math.inf, -math.inf, math.nan, -2.0):
        for g, t in [(x // divisor, a // divisor), (x % divisor, a % divisor),
                     (x.fmod(divisor), a.fmod(divisor))]:
            np.testing.assert_array_equal(g.numpy(), t.numpy(), err_msg=f"divisor {divisor}")


def test_floor_division_errors_and_in_place_forms():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        genesis.tensor([1, 2]) // genesis.tensor([1, 0])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        genesis.tensor([1, 2]) % 0
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        genesis.tensor([True]) // genesis.tensor([True])
    with pytest.raises(RuntimeError, match="not implemented for 'Bool'"):
        genesis.tensor([True]) % genesis.tensor([True])
    with pytest.raises(TypeError):
        genesis.tensor([1]) // "a"
    with pytest.raises(TypeError):
        genesis.fmod(5, genesis.tensor([2]))
    x = genesis.tensor([7, -7])
    y = x
    y //= 2
    assert y is x and x.tolist() == [3, -4]
    x %= 3
    assert x.tolist() == [0, 2] and y is x
    assert x.floor_divide_(genesis.tensor([1, 2])) is x and x.tolist() == [0, 1]
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x //= 1.5
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        x.fmod_(2.0)
    f = genesis.tensor([7.5, -7.5])
    f %= 2
    assert f.tolist() == [1.5, 0.5]
    assert f.remainder_(genesis.tensor([1.0, -1.0])).tolist() == [0.5, -0.5]
    # with autograd recording, x //= y rebinds x (as x += y does)
    w = genesis.tensor([3.0, -3.0], requires_grad=True)
    v = w
    v %= 2
    assert v is not w and v.tolist() == [1.0, 1.0]
    v.sum().backward()
    assert w.grad.tolist() == [1.0, 1.0]
    assert not (w // 2).requires_grad  # floor division has no gradient


# ------------------------------------------------------------------------------------------------ in place

IN_PLACE = ["neg", "abs", "sign", "exp", "expm1", "log", "log1p", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
            "relu", "reciprocal", "square", "floor", "ceil", "round", "atan", "asin", "acos", "sinh", "cosh", "tan",
            "asinh", "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arctanh", "log2", "log10", "exp2", "trunc",
            "fix", "frac", "nan_to_num", "negative", "logical_not"]


@pytest.mark.parametrize("name", IN_PLACE)
def test_in_place_unary_forms_write_into_the_tensor(name):
    a = np.random.default_rng(5).uniform(0.05, 0.95, (3, 4))
    x, t = genesis.tensor(a), torch.tensor(a)
    view = x[1]
    out = getattr(x, name + "_")()
    assert out is x
    close(x, getattr(t, name + "_")())
    close(view, t[1])  # written through: views see the new values


def test_in_place_forms_with_arguments():
    a = np.random.default_rng(6).standard_normal((3, 4))
    b = np.random.default_rng(7).uniform(0.5, 2.0, (4,))
    for name, args in [("clamp", (-0.5, 0.5)), ("clamp_min", (0.1,)), ("clamp_max", (genesis.tensor(b),)),
                       ("clip", (None, 0.3)), ("lerp", (genesis.tensor(b), 0.7)), ("pow", (2,)),
                       ("addcmul", (genesis.tensor(b), genesis.tensor(b))),
                       ("addcdiv", (genesis.tensor(a), genesis.tensor(b))),
                       ("hypot", (genesis.tensor(b),)), ("atan2", (genesis.tensor(b),)), ("fmod", (0.7,)),
                       ("remainder", (genesis.tensor(b),)), ("floor_divide", (0.3,))]:
        x = genesis.tensor(a)
        t = torch.tensor(a)
        targs = [to_torch(v) if isinstance(v, genesis.Tensor) else v for v in args]
        assert getattr(x, name + "_")(*args) is x
        close(x, getattr(t, name + "_")(*targs))
    x = genesis.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        x.exp_()
    assert x.tolist() == [1, 2, 3]
    assert x.abs_().neg_().tolist() == [-1, -2, -3]
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        genesis.ones(3).lerp_(genesis.ones(2, 3), 0.5)
    leaf = genesis.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf.exp_()
    with genesis.no_grad():
        leaf.exp_()
    assert abs(leaf[0].item() - math.e) < 1e-6


# ------------------------------------------------------------------------------------------------ integers and bools

def test_integer_inputs_match_torch():
    a = genesis.tensor([[1, -2, 3], [4, 5, -6]])
    t = torch.tensor([[1, -2, 3], [4, 5, -6]])
    pairs = [
        (a.repeat(2, 2), t.repeat(2, 2)), (a.repeat_interleave(2), t.repeat_interleave(2)),
        (genesis.repeat_interleave(genesis.tensor([2, 0, 3])), torch.repeat_interleave(torch.tensor([2, 0, 3]))),
        (a.roll(1), t.roll(1)), (a.diag(), t.diag()), (a.trace(), t.trace()),
        (a.int().trace(), t.int().trace()), (genesis.diag(genesis.tensor([1, 2])), torch.diag(torch.tensor([1, 2]))),
        (genesis.einsum("ij,kj->ik", a, a), torch.einsum("ij,kj->ik", t, t)),
        (genesis.einsum("ij->j", a.int()), torch.einsum("ij->j", t.int())),
        (genesis.einsum("ij,j->i", a.int(), a[0].int()), torch.einsum("ij,j->i", t.int(), t[0].int())),
        (a.count_nonzero(), t.count_nonzero()), (genesis.count_nonzero(a, (0, -1)), torch.count_nonzero(t, (0, -1))),
        (genesis.count_nonzero(a.clamp_min(0), 1), torch.count_nonzero(t.clamp_min(0), 1)),
        (a.nan_to_num(), t.nan_to_num()),
        (a.clamp_min(genesis.tensor([2, 2, 2])), t.clamp_min(torch.tensor([2, 2, 2]))),
        (genesis.outer(a[0], a[1]), torch.outer(t[0], t[1])), (a.rot90(), t.rot90()),
        (genesis.hstack([a, a]), torch.hstack([t, t])),
        (genesis.isclose(a, a + 1, atol=1), torch.isclose(t, t + 1, atol=1)),
        (genesis.isclose(a, a + 1), torch.isclose(t, t + 1)),
        (genesis.cartesian_prod(a[0], a[1]), torch.cartesian_prod(t[0], t[1])),
        (a.trunc(), t.trunc()), (genesis.where(a > 0)[1], torch.where(t > 0)[1]),
        (a.atan2(a + 7), t.atan2(t + 7)), (genesis.hypot(a.float(), a.float()), torch.hypot(t.float(), t.float())),
    ]
    for g, want in pairs:
        assert str(g.dtype) == str(want.dtype).replace("torch", "genesis"), (g, want)
        if g.is_floating_point():
            np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-6)
        else:
            assert g.tolist() == want.tolist()


def test_comparisons_follow_torch():
    a = torch.tensor([1.0, 2.0, math.inf, -math.inf, math.nan, 1e-9, 100.0], dtype=torch.float64)
    b = torch.tensor([1.0 + 1e-6, 2.1, math.inf, math.inf, math.nan, 0.0, 100.001], dtype=torch.float64)
    x, y = genesis.tensor(a.numpy()), genesis.tensor(b.numpy())
    for kw in [{}, {"equal_nan": True}, {"rtol": 0, "atol": 0}, {"rtol": 1e-3}, {"atol": 0.2, "rtol": 0}]:
        assert genesis.isclose(x, y, **kw).tolist() == torch.isclose(a, b, **kw).tolist(), kw
        assert x.allclose(x, **kw) == a.allclose(a, **kw)
        assert genesis.allclose(x[:2], y[:2], **kw) == torch.allclose(a[:2], b[:2], **kw)
    assert genesis.isclose(x[:2], y[1:2]).tolist() == torch.isclose(a[:2], b[1:2]).tolist()
    assert genesis.equal(x[:2], x[:2].clone()) and not genesis.equal(x, x)  # NaN != NaN
    assert genesis.equal(genesis.ones(2), genesis.ones(2, dtype=genesis.float64))
    assert not genesis.equal(genesis.ones(2), genesis.ones(3)) and not x[:2].equal(x[:2].reshape(1, 2))
    assert genesis.equal(genesis.ones(0), genesis.ones(0))
    assert isinstance(genesis.allclose(x, x), bool)


def test_nan_to_num_defaults_follow_torch():
    a = torch.tensor([math.nan, math.inf, -math.inf, 1.5])
    for dtype in (torch.float32, torch.float64, torch.float16):
        g = genesis.tensor(a.to(dtype).numpy()).nan_to_num()
        assert g.tolist() == a.to(dtype).nan_to_num().tolist()
    assert genesis.nan_to_num(genesis.tensor(a.numpy()), posinf=7.0).tolist() == \
        torch.nan_to_num(a, posinf=7.0).tolist()


# ------------------------------------------------------------------------------------------------ conversions, dtype

def test_from_numpy_shares_memory_and_checks_types():
    arr = np.arange(6, dtype=np.float64).reshape(2, 3)
    t = genesis.from_numpy(arr)
    assert t.dtype == genesis.float64 and t.shape == (2, 3)
    arr[0, 1] = 42.0
    assert t[0, 1].item() == 42.0  # shared
    t[1, 2] = -1.0
    assert arr[1, 2] == -1.0
    for dt, want in [(np.float32, genesis.float32), (np.float16, genesis.float16), (np.int64, genesis.int64),
                     (np.int32, genesis.int32), (np.int8, genesis.int8), (np.uint8, genesis.uint8)]:
        assert genesis.from_numpy(np.zeros(2, dtype=dt)).dtype == want
    b = np.array([True, False])
    assert genesis.from_numpy(b).tolist() == [True, False]  # copied: DLPack has no bool
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert genesis.from_numpy(ro).tolist() == [0.0, 1.0, 2.0]
    strided = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert genesis.from_numpy(strided).tolist() == strided.tolist()
    for bad, exc in [([1, 2], TypeError), (np.array(["a"]), TypeError), (np.zeros(2, dtype=np.uint16), TypeError),
                     (np.arange(4)[::-1], ValueError)]:
        with pytest.raises(exc):
            torch.from_numpy(bad)
        with pytest.raises(exc):
            genesis.from_numpy(bad)


def test_new_tensor_functions_take_dtype_and_device_from_self():
    x = genesis.ones(2, dtype=genesis.float64)
    i = genesis.tensor([1, 2], dtype=genesis.int32)
    assert x.new_zeros(3).dtype == genesis.float64 and x.new_zeros((2, 3)).shape == (2, 3)
    assert x.new_zeros(2, 3).tolist() == [[0.0] * 3] * 2 and x.new_ones(2).tolist() == [1.0, 1.0]
    assert i.new_full((2,), 2.5).tolist() == [2, 2] and i.new_full((2,), 2.5).dtype == genesis.int32
    assert x.new_empty(2, 3).shape == (2, 3) and x.new_empty((4,)).dtype == genesis.float64
    assert x.new_tensor([1, 2]).dtype == genesis.float64 and i.new_tensor(np.array([1.7])).tolist() == [1]
    assert x.new_ones(2, dtype=genesis.int64).dtype == genesis.int64
    r = x.new_zeros(2, requires_grad=True)
    assert r.requires_grad and r.is_leaf
    assert str(x.new_zeros(1, device="cpu").device) == "cpu"


def test_type_names_and_conversion():
    names = {genesis.float32: "Float", genesis.float64: "Double", genesis.float16: "Half",
             genesis.bfloat16: "BFloat16", genesis.int64: "Long", genesis.int32: "Int", genesis.int8: "Char",
             genesis.uint8: "Byte", genesis.bool: "Bool"}
    for dt, name in names.items():
        assert genesis.zeros(1, dtype=dt).type() == f"genesis.{name}Tensor"
        t = getattr(torch, str(dt).split(".")[1])
        assert torch.zeros(1, dtype=t).type() == f"torch.{name}Tensor"
    x = genesis.tensor([1.5, 2.5])
    assert x.type(genesis.int64).dtype == genesis.int64 and x.type(genesis.float32) is x
    assert x.type("genesis.DoubleTensor").dtype == genesis.float64
    assert x.type("torch.LongTensor").tolist() == [1, 2]
    with pytest.raises(ValueError, match="invalid type"):
        x.type("genesis.FooTensor")
    with pytest.raises(ValueError):
        torch.ones(1).type("torch.FooTensor")
    # the legacy constructors and type objects
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor", "BoolTensor"):
        g_cls, t_cls = getattr(genesis, name), getattr(torch, name)
        assert g_cls(2, 3).shape == tuple(t_cls(2, 3).shape) and g_cls((4,)).tolist() == t_cls((4,)).tolist()
        assert g_cls([1, 0]).tolist() == t_cls([1, 0]).tolist()
        assert g_cls().shape == (0,)
        made = g_cls([1])
        assert isinstance(made, g_cls) and made.type() == f"genesis.{name}" and t_cls([1]).type() == f"torch.{name}"
        assert isinstance(made, genesis.Tensor) and not isinstance(made, genesis.HalfTensor)
        assert x.type(g_cls).dtype == made.dtype
    assert genesis.LongTensor(6).zero_().view(-1, 2).tolist() == [[0, 0]] * 3
    with pytest.raises(TypeError):
        genesis.FloatTensor(genesis.tensor([1]))


def test_default_dtype_drives_float_creation():
    assert genesis.get_default_dtype() == genesis.float32
    with pytest.raises(TypeError, match="only floating-point types"):
        genesis.set_default_dtype(genesis.int64)
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    genesis.set_default_dtype(genesis.float64)
    try:
        assert genesis.get_default_dtype() == genesis.float64
        assert genesis.tensor([1.5]).dtype == genesis.float64 and genesis.tensor(0.1).item() == 0.1
        assert genesis.tensor([1, 2]).dtype == genesis.int64 and genesis.tensor([True]).dtype == genesis.bool
        assert genesis.tensor(np.zeros(2, dtype=np.float32)).dtype == genesis.float32  # arrays keep theirs
        assert genesis.as_tensor([0.5]).dtype == genesis.float64
        for t in (genesis.zeros(2), genesis.ones(2, 3), genesis.empty(2), genesis.rand(2), genesis.randn(2),
                  genesis.full((2,), 1.5), genesis.arange(0.0, 1.0, 0.25), genesis.arange(2.5),
                  genesis.linspace(0, 1, 5), genesis.eye(2), genesis.scalar_tensor(3)):
            assert t.dtype == genesis.float64
        assert genesis.arange(3).dtype == genesis.int64 and genesis.full((2,), 3).dtype == genesis.int64
        assert genesis.zeros(2, dtype=genesis.float32).dtype == genesis.float32
        assert genesis.tensor([1, 2]).atan().dtype == genesis.float64  # int -> default float in composites
        assert genesis.where(genesis.tensor([True, False]), 1.0, 0.0).dtype == genesis.float64
        assert genesis.tensor([0.1]).item() == 0.1
    finally:
        genesis.set_default_dtype(genesis.float32)
    assert genesis.tensor([1.5]).dtype == genesis.float32 and genesis.zeros(1).dtype == genesis.float32


def test_where_single_argument_and_scalars():
    c = genesis.tensor([[True, False, True], [False, False, True]])
    t = torch.tensor([[True, False, True], [False, False, True]])
    got, want = genesis.where(c), torch.where(t)
    assert len(got) == len(want) == 2 and [g.tolist() for g in got] == [w.tolist() for w in want]
    assert genesis.where(genesis.tensor(True))[0].tolist() == torch.where(torch.tensor(True))[0].tolist()
    assert genesis.where(c, 1.0, 0.0).tolist() == torch.where(t, 1.0, 0.0).tolist()
    assert genesis.where(c, genesis.ones(3), 0.0).shape == (2, 3)


def test_einsum_runs_matmul_through_bmm_for_large_contractions():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((16, 32, 24)), rng.standard_normal((24, 32, 8))
    close(genesis.einsum("ikj,jkl->il", genesis.tensor(a), genesis.tensor(b)),
          torch.einsum("ikj,jkl->il", torch.tensor(a), torch.tensor(b)))
    close(genesis.einsum("ab,cd->", genesis.tensor(a[0]), genesis.tensor(b[0])),
          torch.einsum("ab,cd->", torch.tensor(a[0]), torch.tensor(b[0])))
    close(genesis.einsum("ij,jk", genesis.ones(2, 0, dtype=genesis.float64), genesis.ones(0, 3, dtype=genesis.float64)),
          torch.einsum("ij,jk", torch.ones(2, 0, dtype=torch.float64), torch.ones(0, 3, dtype=torch.float64)))
    close(genesis.einsum("...", genesis.tensor(2.5, dtype=genesis.float64)),
          torch.einsum("...", torch.tensor(2.5, dtype=torch.float64)))


# ------------------------------------------------------------------------------------------------ errors

def _o(lib, *shape, **kw):
    return lib.ones(*shape, dtype=lib.float64, **kw)


# (call on genesis or torch as `lib`) -> the same exception type from both
ERRORS = {
    "einsum_size_mismatch": lambda lib: lib.einsum("ij,jk->ik", _o(lib, 2, 3), _o(lib, 4, 5)),
    "einsum_too_few_operands": lambda lib: lib.einsum("ij,jk", _o(lib, 2, 3)),
    "einsum_too_many_operands": lambda lib: lib.einsum("ij", _o(lib, 2, 3), _o(lib, 3)),
    "einsum_rank": lambda lib: lib.einsum("ijk", _o(lib, 2, 3)),
    "einsum_rank_ellipsis": lambda lib: lib.einsum("ij...", _o(lib, 2)),
    "einsum_bad_char": lambda lib: lib.einsum("i1", _o(lib, 2, 3)),
    "einsum_output_unknown": lambda lib: lib.einsum("ij->k", _o(lib, 2, 3)),
    "einsum_output_repeated": lambda lib: lib.einsum("ij->ii", _o(lib, 2, 3)),
    "einsum_repeated_size": lambda lib: lib.einsum("ii->i", _o(lib, 2, 3)),
    "einsum_lone_dot": lambda lib: lib.einsum("i.j", _o(lib, 2, 3)),
    "einsum_two_ellipses": lambda lib: lib.einsum("......", _o(lib, 2, 3)),
    "einsum_ellipsis_broadcast": lambda lib: lib.einsum("...,...->...", _o(lib, 2, 3), _o(lib, 4, 3)),
    "einsum_dtypes": lambda lib: lib.einsum("i,i", _o(lib, 2), lib.ones(2, dtype=lib.float32)),
    "einsum_no_operands": lambda lib: lib.einsum("i->i", []),
    "einsum_equation_type": lambda lib: lib.einsum(3, _o(lib, 2)),
    "repeat_too_few": lambda lib: _o(lib, 2, 3).repeat(2),
    "repeat_negative": lambda lib: _o(lib, 2, 3).repeat(-1, 2),
    "repeat_interleave_size": lambda lib: _o(lib, 2, 3).repeat_interleave(lib.tensor([1, 2]), 1),
    "repeat_interleave_negative": lambda lib: _o(lib, 2, 3).repeat_interleave(-1),
    "repeat_interleave_2d": lambda lib: _o(lib, 2, 3).repeat_interleave(lib.tensor([[1]]), 1),
    "repeat_interleave_dim": lambda lib: _o(lib, 2, 3).repeat_interleave(2, 5),
    "repeat_interleave_float": lambda lib: _o(lib, 2, 3).repeat_interleave(lib.tensor([1.0, 2.0]), 0),
    "roll_align": lambda lib: _o(lib, 2, 3).roll(1, (0, 1)),
    "roll_no_dims": lambda lib: _o(lib, 2, 3).roll((1, 2)),
    "roll_dim": lambda lib: _o(lib, 2, 3).roll(1, 3),
    "diag_3d": lambda lib: _o(lib, 2, 3, 4).diag(),
    "diagonal_same": lambda lib: _o(lib, 2, 3).diagonal(0, 0, 0),
    "diagonal_dim": lambda lib: _o(lib, 2, 3).diagonal(0, 0, 2),
    "trace_3d": lambda lib: _o(lib, 2, 3, 4).trace(),
    "trace_bool": lambda lib: lib.ones(2, 2, dtype=lib.bool).trace(),
    "outer_2d": lambda lib: _o(lib, 3).outer(_o(lib, 2, 1)),
    "dot_2d": lambda lib: lib.dot(_o(lib, 2, 1), _o(lib, 2)),
    "dot_size": lambda lib: lib.dot(_o(lib, 3), _o(lib, 4)),
    "mm_shapes": lambda lib: lib.mm(_o(lib, 3, 7), _o(lib, 10, 5)),
    "mm_1d": lambda lib: lib.mm(_o(lib, 2), _o(lib, 2, 2)),
    "mv_size": lambda lib: lib.mv(_o(lib, 2, 3), _o(lib, 2)),
    "bmm_2d": lambda lib: _o(lib, 2, 3).bmm(_o(lib, 2, 3, 4)),
    "bmm_batch": lambda lib: lib.bmm(_o(lib, 2, 3, 4), _o(lib, 3, 4, 5)),
    "addmm_shapes": lambda lib: lib.addmm(_o(lib, 2), _o(lib, 2, 3), _o(lib, 4, 2)),
    "addmm_1d": lambda lib: lib.addmm(_o(lib, 2, 2), _o(lib, 2), _o(lib, 2, 2)),
    "addmv_vec": lambda lib: lib.addmv(_o(lib, 2), _o(lib, 2, 3), _o(lib, 3, 1)),
    "baddbmm_input": lambda lib: lib.baddbmm(_o(lib, 3, 2, 2), _o(lib, 2, 2, 3), _o(lib, 2, 3, 2)),
    "isclose_dtypes": lambda lib: lib.isclose(_o(lib, 2), lib.ones(2, dtype=lib.float32)),
    "isclose_shapes": lambda lib: lib.isclose(_o(lib, 2), _o(lib, 3)),
    "isclose_rtol": lambda lib: lib.isclose(_o(lib, 2), _o(lib, 2), rtol=-1),
    "allclose_dtypes": lambda lib: lib.allclose(_o(lib, 2), lib.ones(2, dtype=lib.float32)),
    "count_nonzero_dim": lambda lib: lib.count_nonzero(_o(lib, 2, 3), 2),
    "count_nonzero_repeated": lambda lib: lib.count_nonzero(_o(lib, 2, 3), (0, 0)),
    "clamp_nothing": lambda lib: _o(lib, 2).clamp(),
    "clamp_int_in_place": lambda lib: lib.ones(2, dtype=lib.int64).clamp_(0.5),
    "lerp_dtypes": lambda lib: lib.lerp(lib.ones(2, dtype=lib.float32), _o(lib, 2), 0.5),
    "lerp_int": lambda lib: lib.lerp(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32), 0.5),
    "addcdiv_int": lambda lib: lib.addcdiv(*[lib.ones(2, dtype=lib.int32)] * 3),
    "logaddexp_int": lambda lib: lib.logaddexp(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32)),
    "hypot_int": lambda lib: lib.hypot(lib.ones(2, dtype=lib.int32), lib.ones(2, dtype=lib.int32)),
    "floor_divide_zero": lambda lib: lib.tensor([5]) // 0,
    "remainder_zero": lambda lib: lib.tensor([5]).remainder(lib.tensor([0])),
    "floor_divide_bool": lambda lib: lib.tensor([True]) // lib.tensor([True]),
    "floor_divide_in_place_cast": lambda lib: lib.tensor([5]).floor_divide_(2.5),
    "fmod_number_first": lambda lib: lib.fmod(5, lib.tensor([2])),
    "exp_in_place_int": lambda lib: lib.tensor([3]).exp_(),
    "in_place_leaf": lambda lib: _o(lib, 2, requires_grad=True).sin_(),
    "from_numpy_list": lambda lib: lib.from_numpy([1]),
    "set_default_dtype_int": lambda lib: lib.set_default_dtype(lib.int64),
    "vector_norm_int": lambda lib: lib.linalg.vector_norm(lib.ones(2, 3, dtype=lib.int32)),
    "vector_norm_str": lambda lib: lib.linalg.vector_norm(_o(lib, 2, 3), "fro"),
    "vector_norm_empty_inf": lambda lib: lib.linalg.vector_norm(_o(lib, 0, 3), math.inf),
    "vector_norm_narrowing": lambda lib: lib.linalg.vector_norm(_o(lib, 2), dtype=lib.float32),
    "vector_norm_repeated_dim": lambda lib: lib.linalg.vector_norm(_o(lib, 2), 2, (0, 0)),
    "matrix_norm_1d": lambda lib: lib.linalg.matrix_norm(_o(lib, 3)),
    "matrix_norm_ord": lambda lib: lib.linalg.matrix_norm(_o(lib, 2, 3), 3),
    "matrix_norm_dims": lambda lib: lib.linalg.matrix_norm(_o(lib, 2, 3), dim=(0, 0)),
    "linalg_norm_3d_ord": lambda lib: lib.linalg.norm(_o(lib, 2, 3, 4), 2),
    "linalg_norm_fro_int_dim": lambda lib: lib.linalg.norm(_o(lib, 2, 3), "fro", dim=0),
    "norm_int": lambda lib: lib.norm(lib.ones(2, 3, dtype=lib.int32)),
    "norm_fro_3_dims": lambda lib: lib.norm(_o(lib, 2, 3, 4), "fro", dim=(0, 1, 2)),
    "cdist_columns": lambda lib: lib.cdist(_o(lib, 2, 3), _o(lib, 4, 2)),
    "cdist_1d": lambda lib: lib.cdist(_o(lib, 3), _o(lib, 4, 3)),
    "cdist_negative_p": lambda lib: lib.cdist(_o(lib, 2, 3), _o(lib, 4, 3), -1),
    "meshgrid_2d": lambda lib: lib.meshgrid(_o(lib, 2, 2), _o(lib, 3), indexing="ij"),
    "meshgrid_indexing": lambda lib: lib.meshgrid([_o(lib, 2), _o(lib, 3)], indexing="foo"),
    "meshgrid_empty": lambda lib: lib.meshgrid(indexing="ij"),
    "meshgrid_dtypes": lambda lib: lib.meshgrid(lib.tensor([1, 2]), lib.tensor([3.0]), indexing="ij"),
    "cartesian_prod_2d": lambda lib: lib.cartesian_prod(_o(lib, 2, 2), _o(lib, 2)),
    "broadcast_to_size": lambda lib: lib.broadcast_to(_o(lib, 3), (2, 4)),
    "broadcast_to_fewer": lambda lib: lib.broadcast_to(_o(lib, 2, 3), (3,)),
    "broadcast_to_leading_minus1": lambda lib: lib.broadcast_to(_o(lib, 3), (-1, 3)),
    "broadcast_shapes": lambda lib: lib.broadcast_shapes((2,), (3,)),
    "movedim_dim": lambda lib: lib.movedim(_o(lib, 2, 3, 4), 0, 3),
    "movedim_repeated": lambda lib: lib.movedim(_o(lib, 2, 3, 4), (0, 0), (1, 2)),
    "movedim_lengths": lambda lib: lib.movedim(_o(lib, 2, 3, 4), (0, 1), (1,)),
    "hstack_empty": lambda lib: lib.hstack([]),
    "rot90_one_dim": lambda lib: _o(lib, 2, 3).rot90(1, (0,)),
    "rot90_same": lambda lib: _o(lib, 2, 3).rot90(1, (0, -2)),
    "rot90_range": lambda lib: _o(lib, 2, 3).rot90(1, (0, 5)),
    "rot90_1d": lambda lib: lib.rot90(_o(lib, 2), 1, (0, 1)),
    "fliplr_1d": lambda lib: lib.fliplr(_o(lib, 2)),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_raises_what_torch_raises(name):
    with pytest.raises(Exception) as want:
        ERRORS[name](torch)
    with pytest.raises(want.type) as got:
        ERRORS[name](genesis)
    assert got.type is want.type, (got.value, want.value)
    if name.startswith("einsum") and want.type is RuntimeError:
        assert str(got.value).split(" ")[:2] == str(want.value).split(" ")[:2], (got.value, want.value)


def test_matrix_norms_from_singular_values():
    a = np.random.default_rng(9).standard_normal((2, 3, 4))
    if not hasattr(genesis.linalg, "svdvals"):
        with pytest.raises(NotImplementedError, match="svdvals"):
            genesis.linalg.matrix_norm(genesis.tensor(a), "nuc")
        with pytest.raises(NotImplementedError, match="svdvals"):
            genesis.norm(genesis.tensor(a), "nuc")
        return
    for ord in ("nuc", 2, -2):
        check(lambda x: genesis.linalg.matrix_norm(x, ord), lambda x: torch.linalg.matrix_norm(x, ord), [(2, 3, 4)])
        check(lambda x: genesis.linalg.matrix_norm(x, ord, (0, 2), keepdim=True),
              lambda x: torch.linalg.matrix_norm(x, ord, (0, 2), keepdim=True), [(2, 3, 4)])
    check(lambda x: genesis.norm(x, "nuc"), lambda x: torch.norm(x, "nuc"), [(3, 4)])
    check(lambda x: genesis.linalg.norm(x, 2), lambda x: torch.linalg.norm(x, 2), [(3, 4)])


def test_inplace_scatter_index_add_and_clamp_function_match_torch():
    base = np.random.RandomState(3).randn(4, 5)
    index = np.array([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]])
    src = np.random.RandomState(4).randn(2, 5)
    src2 = np.random.RandomState(5).randn(4, 2)
    for name, args_t, args_g in [
        ("scatter_", (0, torch.from_numpy(index), torch.from_numpy(src)),
         (0, genesis.tensor(index), genesis.tensor(src))),
        ("scatter_add_", (0, torch.from_numpy(index), torch.from_numpy(src)),
         (0, genesis.tensor(index), genesis.tensor(src))),
        ("index_add_", (1, torch.tensor([4, 0]), torch.from_numpy(src2)),
         (1, genesis.tensor(np.array([4, 0])), genesis.tensor(src2))),
    ]:
        xt = torch.from_numpy(base.copy()).requires_grad_(True)
        xg = genesis.tensor(base.copy(), requires_grad=True)
        yt = xt * 2
        yg = xg * 2
        getattr(yt, name)(*args_t)
        getattr(yg, name)(*args_g)
        np.testing.assert_allclose(yg.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
        (yt * yt).sum().backward()
        (yg * yg).sum().backward()
        np.testing.assert_allclose(xg.grad.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-10)
    x = genesis.tensor(base.copy())
    assert genesis.clamp_(x, -0.5, 0.5) is x
    np.testing.assert_allclose(x.numpy(), np.clip(base, -0.5, 0.5))
