"""Recurrent layers (torch.nn's RNN, LSTM, GRU and their cells), composed from linear, the activations,
cat and stack, so gradients flow through time by the ops' own rules.

Each layer projects the whole input sequence at once (x W_ih^T + b_ih for every step), then steps
through time with the hidden projection.  Gate order, parameter names (weight_ih_l0, bias_hh_l1_reverse,
weight_hr_l0 for projections), shapes and the U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) initialisation
are torch's, so state dicts load either way.  Packed sequences are not supported.
"""
import math
import numbers
import warnings

from genesis import _C
from genesis.nn import init
from genesis.nn.modules import Module, Parameter

_F = _C.functional


def _linear(x, w, b):
    return _F.linear(x, w, b)


def _rnn_step(mode, gi, h, c, w_hh, b_hh, w_hr):
    """One time step from the input projection gi; returns (h, c)."""
    gh = _linear(h, w_hh, b_hh)
    if mode == "RNN_TANH":
        return (gi + gh).tanh(), None
    if mode == "RNN_RELU":
        return (gi + gh).relu(), None
    if mode == "GRU":
        n = gh.shape[-1] // 3
        r = (gi.narrow(-1, 0, n) + gh.narrow(-1, 0, n)).sigmoid()
        z = (gi.narrow(-1, n, n) + gh.narrow(-1, n, n)).sigmoid()
        new = (gi.narrow(-1, 2 * n, n) + r * gh.narrow(-1, 2 * n, n)).tanh()
        return new + z * (h - new), None
    g = gi + gh  # LSTM: input, forget, cell, output gates
    n = g.shape[-1] // 4
    i, f = g.narrow(-1, 0, n).sigmoid(), g.narrow(-1, n, n).sigmoid()
    cell, o = g.narrow(-1, 2 * n, n).tanh(), g.narrow(-1, 3 * n, n).sigmoid()
    c = f * c + i * cell
    h = o * c.tanh()
    if w_hr is not None:
        h = _linear(h, w_hr, None)
    return h, c


_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "GRU": 3, "LSTM": 4}


def _reset_uniform(module):
    """Every parameter of an RNN or cell U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
    stdv = 1.0 / math.sqrt(module.hidden_size) if module.hidden_size > 0 else 0
    for w in module.parameters():
        init.uniform_(w, -stdv, stdv)


class RNNBase(Module):
    """The multi-layer, optionally bidirectional recurrence shared by RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in _GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        factory = {"device": device, "dtype": dtype}
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(directions):
                layer_input = input_size if layer == 0 else real_hidden * directions
                suffix = "_reverse" if direction == 1 else ""
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for name, shape in shapes:
                    full = f"{name}_l{layer}{suffix}"
                    setattr(self, full, Parameter(_C.empty(shape, **factory)))
                    names.append(full)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        _reset_uniform(self)

    def flatten_parameters(self):
        """Accepted for torch compatibility; the weights are used as they are."""

    @property
    def all_weights(self):
        """The parameters per layer and direction, as torch's all_weights."""
        return [[getattr(self, n) for n in names] for names in self._all_weights]

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    def _layer_weights(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        get = self._parameters.get
        return (get(f"weight_ih_l{layer}{suffix}"), get(f"weight_hh_l{layer}{suffix}"),
                get(f"bias_ih_l{layer}{suffix}"), get(f"bias_hh_l{layer}{suffix}"),
                get(f"weight_hr_l{layer}{suffix}"))

    def _check(self, input, hx, expected, label="Expected hidden size {}, got {}"):
        if tuple(hx.shape) != expected:
            raise RuntimeError(label.format(expected, list(hx.shape)))

    def _run(self, x, h0, c0):
        """x (T, N, I); h0/c0 (layers*directions, N, H); returns output (T, N, D*H), h_n, c_n."""
        directions = 2 if self.bidirectional else 1
        steps = x.shape[0]
        hs, cs = [], []
        for layer in range(self.num_layers):
            outs = []
            for direction in range(directions):
                w_ih, w_hh, b_ih, b_hh, w_hr = self._layer_weights(layer, direction)
                gi = _linear(x, w_ih, b_ih)  # every step's input projection at once
                k = layer * directions + direction
                h = h0[k]
                c = c0[k] if c0 is not None else None
                seq = [None] * steps
                for t in (range(steps - 1, -1, -1) if direction == 1 else range(steps)):
                    h, c = _rnn_step(self.mode, gi[t], h, c, w_hh, b_hh, w_hr)
                    seq[t] = h
                outs.append(_C.stack(seq, 0))
                hs.append(h)
                cs.append(c)
            x = outs[0] if directions == 1 else _C.cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = _F.dropout(x, self.dropout, True)
        return x, _C.stack(hs, 0), (_C.stack(cs, 0) if c0 is not None else None)

    def _prepare(self, input):
        is_batched = input.dim() == 3
        batch_dim = 0 if self.batch_first else 1
        if not is_batched:
            input = input.unsqueeze(batch_dim)
        if input.dim() != 3:
            raise RuntimeError(f"input must have 3 dimensions, got {input.dim()}")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")
        return input, is_batched, batch_dim

    def _zeros(self, input, batch, size):
        directions = 2 if self.bidirectional else 1
        return _C.zeros((self.num_layers * directions, batch, size), dtype=input.dtype, device=input.device)

    def forward(self, input, hx=None):
        if self.mode == "LSTM":
            return self._forward_lstm(input, hx)
        is_batched = input.dim() == 3
        if hx is not None:
            if not is_batched and hx.dim() != 2:
                raise RuntimeError(f"For unbatched 2-D input, hx should also be 2-D but got {hx.dim()}-D tensor")
            if is_batched and hx.dim() != 3:
                raise RuntimeError(f"For batched 3-D input, hx should also be 3-D but got {hx.dim()}-D tensor")
        x, is_batched, batch_dim = self._prepare(input)
        batch = x.shape[batch_dim]
        directions = 2 if self.bidirectional else 1
        if hx is None:
            hx = self._zeros(x, batch, self.hidden_size)
        elif not is_batched:
            hx = hx.unsqueeze(1)
        self._check(x, hx, (self.num_layers * directions, batch, self.hidden_size))
        out, h_n, _ = self._run(x.transpose(0, 1) if self.batch_first else x, hx, None)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            return out.squeeze(batch_dim), h_n.squeeze(1)
        return out, h_n

    def _forward_lstm(self, input, hx):
        is_batched = input.dim() == 3
        if hx is not None:
            if is_batched and (hx[0].dim() != 3 or hx[1].dim() != 3):
                raise RuntimeError("For batched 3-D input, hx and cx should also be 3-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            if not is_batched and (hx[0].dim() != 2 or hx[1].dim() != 2):
                raise RuntimeError("For unbatched 2-D input, hx and cx should also be 2-D but got "
                                   f"({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
        x, is_batched, batch_dim = self._prepare(input)
        batch = x.shape[batch_dim]
        directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if hx is None:
            h0, c0 = self._zeros(x, batch, real_hidden), self._zeros(x, batch, self.hidden_size)
        else:
            h0, c0 = hx
            if not is_batched:
                h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        self._check(x, h0, (self.num_layers * directions, batch, real_hidden))
        self._check(x, c0, (self.num_layers * directions, batch, self.hidden_size),
                    "Expected hidden[1] size {}, got {}")
        out, h_n, c_n = self._run(x.transpose(0, 1) if self.batch_first else x, h0, c0)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            return out.squeeze(batch_dim), (h_n.squeeze(1), c_n.squeeze(1))
        return out, (h_n, c_n)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s


class RNN(RNNBase):
    """Elman RNN: h_t = tanh (or relu)(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh); returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'")
        super().__init__(mode, *args, **kwargs)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """LSTM (input, forget, cell, output gates; proj_size projects h); returns (output, (h_n, c_n))."""

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """GRU (reset, update, new gates); returns (output, h_n)."""

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# ---------------------------------------------------------------- cells

class RNNCellBase(Module):
    """weight_ih (gates*hidden, input), weight_hh (gates*hidden, hidden), bias_ih, bias_hh."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        factory = {"device": device, "dtype": dtype}
        self.weight_ih = Parameter(_C.empty((num_chunks * hidden_size, input_size), **factory))
        self.weight_hh = Parameter(_C.empty((num_chunks * hidden_size, hidden_size), **factory))
        if bias:
            self.bias_ih = Parameter(_C.empty(num_chunks * hidden_size, **factory))
            self.bias_hh = Parameter(_C.empty(num_chunks * hidden_size, **factory))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        """Every weight and bias U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as torch."""
        _reset_uniform(self)

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _inputs(self, input, hx, count):
        name = type(self).__name__
        if input.dim() not in (1, 2):
            raise AssertionError(f"{name}: Expected input to be 1-D or 2-D but received {input.dim()}-D tensor")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        states = []
        for i in range(count):
            h = None if hx is None else (hx if count == 1 else hx[i])
            if h is None:
                h = _C.zeros((input.shape[0], self.hidden_size), dtype=input.dtype, device=input.device)
            elif not is_batched:
                h = h.unsqueeze(0)
            if h.dim() != 2 or h.shape[0] != input.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden0 batch size "
                                   f"{h.shape[0] if h.dim() else 0}")
            if h.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden0 has inconsistent hidden_size: got {h.shape[1]}, expected "
                                   f"{self.hidden_size}")
            states.append(h)
        return input, states, is_batched


class RNNCell(RNNCellBase):
    """h' = tanh (or relu)(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        if self.nonlinearity not in ("tanh", "relu"):
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        x, (h,), is_batched = self._inputs(input, hx, 1)
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = _rnn_step(mode, _linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh, None)
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, (h, c), is_batched = self._inputs(input, hx, 2)
        h, c = _rnn_step("LSTM", _linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh, None)
        return (h, c) if is_batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: returns h'."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, (h,), is_batched = self._inputs(input, hx, 1)
        h, _ = _rnn_step("GRU", _linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh, self.bias_hh, None)
        return h if is_batched else h.squeeze(0)
