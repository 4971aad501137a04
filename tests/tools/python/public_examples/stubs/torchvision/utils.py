"""torchvision.utils.save_image: checks that the batch converts to an image grid; writes no file."""
from torchvision._arrays import to_numpy


def save_image(tensor, fp, nrow=8, padding=2, normalize=False, **kwargs):
    a = to_numpy(tensor)
    if a.ndim not in (2, 3, 4):
        raise ValueError("save_image: expected a 2-D, 3-D or 4-D tensor, got shape {}".format(a.shape))
