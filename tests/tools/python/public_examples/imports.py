"""The only change made to the example programs: their `torch` imports name `genesis` instead.

    import torch                        ->  import genesis as torch
    import torch.nn as nn               ->  import genesis.nn as nn
    import torch.utils.data             ->  import genesis.utils.data
    from torch import nn, optim         ->  from genesis import nn, optim
    from torch.optim.lr_scheduler import StepLR  ->  from genesis.optim.lr_scheduler import StepLR

to_genesis() makes the copies kept here from pytorch/examples; to_torch() undoes it, giving back the original
program (byte for byte) for the control run under PyTorch."""
import re

_TORCH = re.compile(r"^(\s*)(import|from)(\s+)torch(?=[\s.])")
_GENESIS = re.compile(r"^(\s*)(import|from)(\s+)genesis(?=[\s.])")


def to_genesis(source):
    """source with every `import torch...` / `from torch... import` line naming genesis."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if re.match(r"^\s*import\s+torch\s*(#.*)?$", body):
            line = line.replace("import torch", "import genesis as torch", 1)
        else:
            line = _TORCH.sub(r"\1\2\3genesis", line)
        out.append(line)
    return "".join(out)


def to_torch(source):
    """The inverse of to_genesis."""
    out = []
    for line in source.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        if re.match(r"^\s*import\s+genesis as torch\s*(#.*)?$", body):
            line = line.replace("import genesis as torch", "import torch", 1)
        else:
            line = _GENESIS.sub(r"\1\2\3torch", line)
        out.append(line)
    return "".join(out)
