"""genesis.onnx: importable so that programs with an optional ONNX export run; genesis cannot write ONNX graphs."""


def export(model, args, f, *pargs, **kwargs):
    """Not supported: raises NotImplementedError (save the weights with genesis.save(model.state_dict(), path))."""
    raise NotImplementedError("genesis.onnx.export: genesis cannot export ONNX graphs; save the weights with "
                              "genesis.save(model.state_dict(), path) (a safetensors file) instead")


def is_in_onnx_export():
    """False: genesis never traces a model for ONNX export."""
    return False
