"""genesis.peft: LoRA fine-tuning of the causal LMs with Hugging Face PEFT's API and files:

    from genesis.peft import LoraConfig, PeftModel, get_peft_model
    model = genesis.models.AutoModelForCausalLM.from_pretrained("Qwen2.5-0.5B")
    peft_model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"))
    peft_model.print_trainable_parameters()
    opt = genesis.optim.AdamW(peft_model.parameters(), lr=1e-4)        # the adapters only; the base is frozen
    loss = peft_model(input_ids, labels=labels).loss; loss.backward(); opt.step()
    peft_model.save_pretrained("adapter")                 # adapter_config.json + adapter_model.safetensors
    peft_model = PeftModel.from_pretrained(base_model, "adapter")
    merged = peft_model.merge_and_unload()                # W += B A * scale; the base model without adapters

The adapters are the C++ ones (genesis::models::LoraModel): each adapted projection y = x W^T gains
dropout(x) A^T B^T * scale, scale = lora_alpha / r (lora_alpha / sqrt(r) with use_rslora), A (r, in) initialised
kaiming-uniform and B (out, r) zero, so a fresh adapter leaves the model's output unchanged.  They sit beside the
fused inference projections too, so generate() runs the adapted model.  The folders are PEFT's: PEFT loads what
save_pretrained writes and from_pretrained loads what PEFT writes (LoRA over q/k/v/o/gate/up/down_proj).
"""
import contextlib
import copy
import errno
import json
import math
import os
import re
import warnings

import genesis
from genesis import _C
from genesis._grad_mode import no_grad as _no_grad
from genesis.nn.modules import Module, Parameter

CONFIG_NAME = "adapter_config.json"
SAFETENSORS_WEIGHTS_NAME = "adapter_model.safetensors"
WEIGHTS_NAME = "adapter_model.bin"

_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
# PEFT's default target modules for these model types (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING)
_DEFAULT_TARGETS = {t: ["q_proj", "v_proj"] for t in ("qwen2", "qwen3", "llama", "mistral", "gemma", "gemma2",
                                                      "gemma3_text")}


class PeftError(Exception):
    """Base class of genesis.peft's own errors (PEFT's)."""


class NoMatchingPeftModuleError(PeftError, ValueError):
    """No module of the model matched target_modules (a ValueError, as in PEFT)."""


class AdapterNotFoundError(FileNotFoundError, ValueError):
    """An adapter folder or its adapter_config.json does not exist (an OSError; PEFT raises ValueError)."""


class PeftType:
    """PEFT's method names (LoRA only here)."""

    LORA = "LORA"


class TaskType:
    """PEFT's task names (causal LM only here)."""

    CAUSAL_LM = "CAUSAL_LM"


def _peft_value(v):
    """A value of a config field as JSON holds it (sets as sorted lists)."""
    return sorted(v) if isinstance(v, (set, frozenset)) else v


class LoraConfig:
    """PEFT's LoraConfig: r, lora_alpha, lora_dropout, target_modules (names, a regular expression or 'all-linear';
    None: PEFT's default for the model type), bias ('none'), use_rslora, modules_to_save (None) and the other
    fields of adapter_config.json."""

    _FIELDS = dict(task_type=None, peft_type=PeftType.LORA, base_model_name_or_path=None, revision=None,
                   inference_mode=False, r=8, lora_alpha=8, lora_dropout=0.0, target_modules=None,
                   exclude_modules=None, fan_in_fan_out=False, bias="none", use_rslora=False, modules_to_save=None,
                   init_lora_weights=True, layers_to_transform=None, layers_pattern=None, rank_pattern=None,
                   alpha_pattern=None, use_dora=False, lora_bias=False, layer_replication=None)

    def __init__(self, r=8, lora_alpha=8, lora_dropout=0.0, target_modules=None, bias="none", use_rslora=False,
                 modules_to_save=None, **kwargs):
        unknown = [k for k in kwargs if k not in self._FIELDS]
        if unknown:
            raise TypeError(f"LoraConfig.__init__() got an unexpected keyword argument '{unknown[0]}'")
        for k, v in self._FIELDS.items():
            setattr(self, k, copy.deepcopy(kwargs.get(k, v)))
        self.r, self.lora_alpha, self.lora_dropout = r, lora_alpha, lora_dropout
        self.bias, self.use_rslora, self.modules_to_save = bias, use_rslora, modules_to_save
        self.target_modules = set(target_modules) if isinstance(target_modules, (list, tuple)) else target_modules
        self.rank_pattern = self.rank_pattern or {}
        self.alpha_pattern = self.alpha_pattern or {}
        if self.peft_type != PeftType.LORA:
            raise ValueError(f"LoraConfig has peft_type 'LORA', got {self.peft_type!r}")
        if isinstance(self.target_modules, str) and self.layers_to_transform is not None:
            raise ValueError("`layers_to_transform` cannot be used when `target_modules` is a str.")
        if isinstance(self.target_modules, str) and self.layers_pattern is not None:
            raise ValueError("`layers_pattern` cannot be used when `target_modules` is a str.")
        if self.layers_pattern and not self.layers_to_transform:
            raise ValueError("When `layers_pattern` is specified, `layers_to_transform` must also be specified. ")

    @property
    def is_prompt_learning(self):
        """False: LoRA is not a prompt-learning method."""
        return False

    def to_dict(self):
        """The fields as adapter_config.json holds them."""
        return {k: _peft_value(copy.deepcopy(getattr(self, k))) for k in self._FIELDS}

    def __repr__(self):
        return "LoraConfig(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self._FIELDS) + ")"

    def __eq__(self, other):
        return isinstance(other, LoraConfig) and self.to_dict() == other.to_dict()

    def save_pretrained(self, save_directory):
        """Writes adapter_config.json into save_directory."""
        if os.path.isfile(save_directory):
            raise AssertionError(f"Provided path ({save_directory}) should be a directory, not a file")
        os.makedirs(save_directory, exist_ok=True)
        with open(os.path.join(save_directory, CONFIG_NAME), "w") as f:
            json.dump({**getattr(self, "_extra", {}), **self.to_dict()}, f, indent=2, sort_keys=True)
            f.write("\n")

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, subfolder=None, **kwargs):
        """The config in a folder's adapter_config.json (fields Genesis does not know are kept for saving)."""
        path = _adapter_folder(pretrained_model_name_or_path, subfolder)
        return cls.from_json_file(os.path.join(path, CONFIG_NAME), **kwargs)

    @classmethod
    def from_json_file(cls, path_json_file, **kwargs):
        """The config of an adapter_config.json file."""
        with open(path_json_file) as f:
            try:
                d = json.load(f)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path_json_file}: not JSON ({e})") from None
        if not isinstance(d, dict):
            raise ValueError(f"{path_json_file}: not a JSON object")
        if d.get("peft_type", PeftType.LORA) != PeftType.LORA:
            raise ValueError(f"{path_json_file}: peft_type {d.get('peft_type')!r} is not supported (only LORA)")
        d.update(kwargs)
        extra = {k: d.pop(k) for k in list(d) if k not in cls._FIELDS}
        cfg = cls(**d)
        cfg._extra = extra  # written back by save_pretrained, as PEFT keeps fields it does not know
        return cfg


def _first(model):
    """The model's first parameter (its device and dtype)."""
    return next(iter(model.parameters()))


def _adapter_folder(path, subfolder=None):
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"expected the path of an adapter folder (str or os.PathLike), got {type(path).__name__}")
    path = os.fspath(path)
    full = os.path.join(path, subfolder) if subfolder else path
    if not os.path.isfile(os.path.join(full, CONFIG_NAME)):
        why = "the folder does not exist" if not os.path.exists(full) else f"the folder has no {CONFIG_NAME}"
        raise AdapterNotFoundError(errno.ENOENT, f"Can't find '{CONFIG_NAME}' at '{path}' ({why}; genesis loads "
                                   "local adapter folders only)", os.path.join(full, CONFIG_NAME))
    return full


def _impl_of(model):
    if isinstance(model, PeftModel):
        raise ValueError("the model already is a PeftModel (its base model has adapters)")
    impl = getattr(model, "_impl", None)
    if not isinstance(model, genesis.models.QwenForCausalLM) or not isinstance(impl, _C.models.QwenForCausalLM):
        raise TypeError(f"LoRA adapters go on a genesis causal LM (genesis.models.AutoModelForCausalLM), got "
                        f"{type(model).__name__}")
    return impl


def _resolve_targets(model, config):
    """The projection names (q_proj, ...) config.target_modules selects in model, matched against the module names
    as PEFT matches them (a str is a regular expression over the whole name, a list matches name suffixes)."""
    targets = config.target_modules
    if targets is None:
        mt = model.config.model_type
        if mt not in _DEFAULT_TARGETS:
            raise ValueError("Please specify `target_modules` in `peft_config`")
        targets = set(_DEFAULT_TARGETS[mt])
    if isinstance(targets, str) and targets.lower() == "all-linear":
        return list(_PROJECTIONS)
    names = [n for n, _ in model.named_modules() if n]
    layers = config.layers_to_transform
    if isinstance(layers, int):
        layers = [layers]

    def matches(key):
        if isinstance(targets, str):
            return re.fullmatch(targets, key) is not None
        if not any(key == t or key.endswith("." + t) for t in targets):
            return False
        if layers is not None:
            m = re.match(r"model\.layers\.(\d+)\.", key)
            return m is not None and int(m.group(1)) in layers
        return True

    matched = [n for n in names if matches(n)]
    leaves = sorted({n.rsplit(".", 1)[-1] for n in names})
    if not matched:
        msg = f"Target modules {targets} not found in the base model. Please check the target modules and try again."
        if config.layers_to_transform is not None:
            msg += f" Note: You specified 'layers_to_transform': {config.layers_to_transform}."
        msg += f" The model's modules are named (last part): {leaves}; LoRA adapts {list(_PROJECTIONS)}."
        raise NoMatchingPeftModuleError(msg)
    n_layers = model.config.num_hidden_layers
    chosen = []
    for key in matched:
        leaf = key.rsplit(".", 1)[-1]
        if leaf not in _PROJECTIONS:
            if leaf == "lm_head" or leaf == "embed_tokens":
                raise NotImplementedError(f"Target module {key} is not supported: genesis adapts the decoder's "
                                          f"linear projections {list(_PROJECTIONS)}")
            raise ValueError(f"Target module {key} is not supported. Currently, only the following modules are "
                             f"supported: the linear projections {list(_PROJECTIONS)}.")
        if leaf not in chosen:
            chosen.append(leaf)
    for leaf in chosen:
        hit = sum(1 for k in matched if k.rsplit(".", 1)[-1] == leaf)
        if hit != n_layers:
            raise NotImplementedError(f"target_modules match {leaf} in {hit} of the {n_layers} layers: genesis adapts "
                                      "a projection in every layer (layers_to_transform and per-layer patterns are "
                                      "not supported)")
    return [p for p in _PROJECTIONS if p in chosen]


def _check_config(config):
    if not isinstance(config, LoraConfig):
        raise TypeError(f"peft_config must be a genesis.peft.LoraConfig, got {type(config).__name__}")
    r = config.r
    if isinstance(r, bool) or not isinstance(r, int) or r <= 0:
        raise ValueError(f"`r` should be a positive integer value but the value passed is {r}")
    a = config.lora_alpha
    if isinstance(a, bool) or not isinstance(a, (int, float)) or not math.isfinite(a) or a == 0:
        raise ValueError(f"`lora_alpha` should be a non-zero number but the value passed is {a}")
    p = config.lora_dropout
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
        raise ValueError(f"dropout probability has to be between 0 and 1 (1 excluded), but got {p}")
    if config.task_type not in (None, TaskType.CAUSAL_LM):
        raise NotImplementedError(f"task_type={config.task_type!r} is not supported (genesis has causal LMs: "
                                  "CAUSAL_LM)")
    if config.bias != "none":
        raise NotImplementedError(f"Requested bias: {config.bias}, is not implemented (genesis trains bias-free "
                                  "adapters: bias='none').")
    if config.modules_to_save:
        raise NotImplementedError(f"modules_to_save={config.modules_to_save!r} is not supported (genesis saves "
                                  "only the LoRA weights)")
    for k in ("use_dora", "lora_bias"):
        if getattr(config, k):
            raise NotImplementedError(f"{k}=True is not supported")
    for k in ("exclude_modules", "layer_replication", "rank_pattern", "alpha_pattern"):
        if getattr(config, k):
            raise NotImplementedError(f"{k} is not supported")
    if config.init_lora_weights not in (True, False, "gaussian"):
        raise NotImplementedError(f"init_lora_weights={config.init_lora_weights!r} is not supported (True, False "
                                  "or 'gaussian')")
    if config.fan_in_fan_out:
        warnings.warn("fan_in_fan_out is set to True but the target module is `torch.nn.Linear`. Setting "
                      "fan_in_fan_out to False.", stacklevel=3)
        config.fan_in_fan_out = False


def _cpp_config(config, targets):
    c = _C.peft.LoraConfig()
    c.r, c.lora_alpha, c.lora_dropout = config.r, float(config.lora_alpha), float(config.lora_dropout)
    c.use_rslora = bool(config.use_rslora)
    c.target_modules = list(targets)
    c.base_model_name_or_path = config.base_model_name_or_path or ""
    # the other fields (and unknown ones read from a file) are written back as they are
    d = {k: v for k, v in config.to_dict().items() if v is not None}
    d.update(getattr(config, "_extra", {}))
    c.source_json = json.dumps(d)
    return c


class _AdapterTree(Module):
    """A level of the adapter parameters' tree, named as PEFT names it
    (base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight); attribute lookups it cannot answer
    go to the model part it mirrors, where there is one."""

    def __init__(self, target=None, label="Module", extra=""):
        super().__init__()
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_label", label)
        object.__setattr__(self, "_extra", extra)

    def _repr_name(self):
        return self._label

    def extra_repr(self):
        return self._extra

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            target = self.__dict__.get("_target")
            if target is None:
                raise
            return getattr(target, name)

    def forward(self, *args, **kwargs):
        target = self.__dict__.get("_target")
        if target is None:
            raise RuntimeError("this part of the adapter tree holds parameters only")
        return target(*args, **kwargs)


class LoraModel(_AdapterTree):
    """PEFT's LoraModel: the adapters of a model (peft_model.base_model); .model mirrors the model, whose own
    attributes it answers."""


class PeftModel(Module):
    """A model with LoRA adapters (get_peft_model / PeftModel.from_pretrained): forward, loss and generate are the
    base model's, now adapted; parameters() yields the adapters' weights only (the base is frozen)."""

    def __init__(self, model, peft_config, adapter_name="default", _adapters=None):
        super().__init__()
        if adapter_name != "default":
            raise NotImplementedError(f"adapter_name={adapter_name!r}: genesis holds one adapter, 'default'")
        impl = _impl_of(model)
        if _adapters is None:
            _check_config(peft_config)
            targets = _resolve_targets(model, peft_config)
            peft_config = copy.deepcopy(peft_config)
            if peft_config.target_modules is None or peft_config.target_modules == "all-linear":
                peft_config.target_modules = set(targets)  # as PEFT resolves them
            if peft_config.base_model_name_or_path is None:
                peft_config.base_model_name_or_path = getattr(model, "name_or_path", None) or None
            _adapters = _C.peft.LoraModel.attach(impl, _cpp_config(peft_config, targets))
            if peft_config.init_lora_weights is not True:
                _reinit(_adapters, peft_config)
        _adapters.train(model.training)
        object.__setattr__(self, "_model", model)
        object.__setattr__(self, "_adapters", _adapters)
        object.__setattr__(self, "peft_config", {adapter_name: peft_config})
        object.__setattr__(self, "active_adapter", adapter_name)
        object.__setattr__(self, "training", model.training)
        root = LoraModel(model, "LoraModel")
        self._modules["base_model"] = root
        mirror = _AdapterTree(model, type(model).__name__)
        root._modules["model"] = mirror
        for path, a, b, scale in _adapters.adapters():
            node = mirror
            parts = path.split(".")
            for i, part in enumerate(parts):
                if part not in node._modules:
                    last = i == len(parts) - 1
                    node._modules[part] = _AdapterTree(
                        None, "lora.Linear" if last else "Module",
                        f"in_features={a.shape[1]}, out_features={b.shape[0]}, r={a.shape[0]}, scale={scale:g}"
                        if last else "")
                node = node._modules[part]
            for name, w in (("lora_A", a), ("lora_B", b)):
                leaf = node._modules[name] = _AdapterTree(None, "ModuleDict")
                default = leaf._modules[adapter_name] = _AdapterTree(
                    None, "Linear", f"in_features={w.shape[1]}, out_features={w.shape[0]}, bias=False")
                default._parameters["weight"] = Parameter(w, requires_grad=w.requires_grad)

    # ---- PEFT's API
    @classmethod
    def from_pretrained(cls, model, model_id, adapter_name="default", is_trainable=False, config=None,
                        autocast_adapter_dtype=True, subfolder=None, **kwargs):
        """model with the adapter of folder model_id (adapter_config.json, adapter_model.safetensors) attached;
        is_trainable=False (the default) loads it frozen, for inference."""
        for k in ("revision", "token", "cache_dir", "local_files_only", "low_cpu_mem_usage", "torch_device",
                  "ephemeral_gpu_offload", "key_mapping"):
            kwargs.pop(k, None)
        if kwargs:
            raise TypeError(f"from_pretrained() got an unexpected keyword argument '{next(iter(kwargs))}'")
        impl = _impl_of(model)
        path = _adapter_folder(model_id, subfolder)
        if config is None:
            config = LoraConfig.from_pretrained(path)
            adapters = _C.peft.LoraModel.from_pretrained(impl, path, bool(is_trainable))
        else:
            _check_config(config)
            config = copy.deepcopy(config)
            weights = os.path.join(path, SAFETENSORS_WEIGHTS_NAME)
            if not os.path.isfile(weights):
                raise AdapterNotFoundError(errno.ENOENT, f"No {SAFETENSORS_WEIGHTS_NAME} in '{model_id}'", weights)
            adapters = _C.peft.LoraModel.attach(impl, _cpp_config(config, _resolve_targets(model, config)))
            try:
                adapters.load_peft_state_dict(genesis.load_file(weights, device=_first(model).device), weights)
            except BaseException:
                adapters.unload()
                raise
            if not is_trainable:
                for _, a, b, _s in adapters.adapters():
                    a.requires_grad_(False)
                    b.requires_grad_(False)
        config.inference_mode = not is_trainable
        peft_model = cls(model, config, adapter_name, _adapters=adapters)
        if not is_trainable:
            peft_model.eval()
        return peft_model

    def get_base_model(self):
        """The model the adapters are attached to."""
        return self._model

    @property
    def active_adapters(self):
        """['default']."""
        return [self.active_adapter]

    def forward(self, *args, **kwargs):
        """The base model's forward, with the adapters."""
        if (self._adapters.training and genesis.is_grad_enabled() and self._adapters.attached
                and self._adapters.config.lora_dropout > 0 and self._model._impl.gradient_checkpointing):
            raise NotImplementedError("lora_dropout > 0 with gradient checkpointing is not supported (the "
                                      "recomputation in backward would draw other dropout masks): set "
                                      "lora_dropout=0 or turn gradient checkpointing off")
        return self._model(*args, **kwargs)

    def generate(self, *args, **kwargs):
        """The base model's generate, with the adapters."""
        return self._model.generate(*args, **kwargs)

    def train(self, mode=True):
        """Training mode of the model and the adapters (their dropout)."""
        super().train(mode)
        self._model.train(mode)
        self._adapters.train(mode)
        return self

    def get_nb_trainable_parameters(self):
        """(trainable parameters, all parameters: the base model's and the adapters')."""
        adapter = list(self.parameters())
        trainable = sum(p.numel() for p in adapter if p.requires_grad)
        return trainable, sum(p.numel() for p in self._model.parameters()) + sum(p.numel() for p in adapter)

    @property
    def trainable_parameters(self):
        """The adapter parameters that require grad, in model order."""
        return [p for p in self.parameters() if p.requires_grad]

    def print_trainable_parameters(self):
        """Prints PEFT's line: trainable params: N || all params: M || trainable%: P."""
        trainable_params, all_param = self.get_nb_trainable_parameters()
        print(f"trainable params: {trainable_params:,d} || all params: {all_param:,d} || trainable%: "
              f"{100 * trainable_params / all_param:.4f}")

    def save_pretrained(self, save_directory, safe_serialization=True, selected_adapters=None, is_main_process=True,
                        **kwargs):
        """Writes adapter_config.json and adapter_model.safetensors (PEFT's key names) into save_directory."""
        if os.path.isfile(save_directory):
            raise ValueError(f"Provided path ({save_directory}) should be a directory, not a file")
        if not safe_serialization:
            raise NotImplementedError("safe_serialization=False (adapter_model.bin, a pickle) is not supported")
        if selected_adapters is not None and list(selected_adapters) != [self.active_adapter]:
            raise ValueError(f"selected_adapters {list(selected_adapters)!r}: this model has the adapter "
                             f"{self.active_adapter!r} only")
        if is_main_process:
            self._adapters.save_pretrained(os.fspath(save_directory))

    @contextlib.contextmanager
    def disable_adapter(self):
        """Runs the base model without the adapters inside the block (their weights are kept)."""
        self._adapters.set_enabled(False)
        try:
            yield
        finally:
            self._adapters.set_enabled(True)

    def _detach(self, merge, safe_merge=False):
        if merge and safe_merge:
            with _no_grad():
                for path, a, b, scale in self._adapters.adapters():
                    if not bool(genesis.isfinite(b.matmul(a) * scale).all().item()):
                        raise ValueError(f"NaNs detected in the merged weights. The adapter {self.active_adapter} "
                                         "seems to be broken")
        if merge:
            self._adapters.merge_and_unload()
        else:
            self._adapters.unload()
        self.base_model._modules.clear()  # the adapters are gone: parameters() yields nothing
        return self._model

    def merge_and_unload(self, progressbar=False, safe_merge=False, adapter_names=None):
        """Folds each adapter into its base weight (W += B A * scale, computed in float32 or wider) and returns the
        base model, without adapters."""
        if adapter_names is not None and list(adapter_names) != [self.active_adapter]:
            raise ValueError(f"adapter_names {list(adapter_names)!r}: this model has the adapter "
                             f"{self.active_adapter!r} only")
        return self._detach(True, safe_merge)

    def unload(self):
        """Removes the adapters without merging them and returns the base model as it was."""
        return self._detach(False)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name in ("base_model", "_model") or "_model" not in self.__dict__:
                raise
            return getattr(self.__dict__["_model"], name)

    def to(self, *args, **kwargs):
        """Moves / casts the base model (its to()) and the adapters with it: adapters over a bfloat16 or float16 base
        stay float32, as get_peft_model makes them."""
        self._model.to(*args, **kwargs)
        dtype, device = _first(self._model).dtype, _first(self._model).device
        if dtype in (genesis.bfloat16, genesis.float16):
            dtype = genesis.float32
        with _no_grad():
            for p in self.parameters():
                p.data = p.data.to(device).to(dtype)
                if p.grad is not None:
                    p.grad.data = p.grad.data.to(device).to(dtype)
        return self


def _reinit(adapters, config):
    """init_lora_weights=False (A and B as nn.Linear initialises them) or 'gaussian' (A normal(0, 1/r), B zero)."""
    with _no_grad():
        for _, a, b, _s in adapters.adapters():
            if config.init_lora_weights == "gaussian":
                genesis.nn.init.normal_(a, std=1 / config.r)
            else:
                genesis.nn.init.kaiming_uniform_(b, a=math.sqrt(5))


def get_peft_model(model, peft_config, adapter_name="default", mixed=False, autocast_adapter_dtype=True,
                   revision=None, low_cpu_mem_usage=False):
    """model with fresh LoRA adapters of peft_config on the targeted projections (the model is frozen and changed
    in place, as PEFT does); returns the PeftModel."""
    if mixed:
        raise NotImplementedError("mixed=True (PeftMixedModel) is not supported")
    return PeftModel(model, peft_config, adapter_name)


def get_peft_model_state_dict(model, state_dict=None, adapter_name="default"):
    """The adapter weights under PEFT's saved names (base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight,
    ...), as save_pretrained writes them."""
    if not isinstance(model, PeftModel):
        raise TypeError(f"expected a PeftModel, got {type(model).__name__}")
    return dict(model._adapters.peft_state_dict())


def set_peft_model_state_dict(model, peft_model_state_dict, adapter_name="default"):
    """Copies PEFT-named adapter weights in (a missing, unexpected or wrongly shaped tensor is an error)."""
    if not isinstance(model, PeftModel):
        raise TypeError(f"expected a PeftModel, got {type(model).__name__}")
    model._adapters.load_peft_state_dict(dict(peft_model_state_dict), "state_dict")
