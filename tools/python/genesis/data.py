"""genesis.data: datasets, samplers and the DataLoader (torch.utils.data's API), plus Fashion-MNIST.

    images, labels = genesis.data.fashion_mnist(train=True)      # Debian's dataset-fashion-mnist
    loader = genesis.data.DataLoader(genesis.data.TensorDataset(images, labels),
                                     batch_size=64, shuffle=True, seed=0)
    for epoch in range(10):
        loader.set_epoch(epoch)
        for x, y in loader: ...

Any map-style dataset (__len__ and __getitem__) or IterableDataset works, with torch's default
collation (or collate_fn), samplers, batch samplers and worker processes (num_workers > 0); the
same import path as torch is genesis.utils.data.

shuffle=True without a generator draws epoch e's order from (seed, e) only, the same order as the
C++ DataLoader: a Python run and a C++ run of the same model see the same batches. A
TensorDataset with the default collation is batched in the main process by one index_select per
tensor (the C++ loader's rows; no worker processes are started, the rows are in memory already).
With a generator, shuffle=True draws from it as torch's RandomSampler does.

Distributed training shards the data in either of two ways (rank r of R gets positions r, r + R, ...
of one permutation, padded by repeating its start so every rank gets ceil(n / R) examples):

    loader = DataLoader(ds, batch_size=64, shuffle=True, num_replicas=dist.get_world_size(),
                        rank=dist.get_rank())                     # the C++ loader shards
    sampler = DistributedSampler(ds)                              # torch's way
    loader = DataLoader(ds, batch_size=64, sampler=sampler)       # sampler.set_epoch(e) each epoch
"""
import bisect
import collections.abc
import itertools
import math
import multiprocessing
import os
import pickle
import queue
import random
import sys
import traceback
import warnings
import weakref

from genesis import _C
from genesis._C.data import FASHION_MNIST_ROOT, fashion_mnist, fashion_mnist_available, fashion_mnist_classes  # noqa

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split",
    "FASHION_MNIST_ROOT", "fashion_mnist", "fashion_mnist_available", "fashion_mnist_classes",
]


# ----------------------------------------------------------------------------------------- datasets

class Dataset:
    """A map from keys to examples: subclasses define __getitem__ (and usually __len__)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of examples: subclasses define __iter__ (shard it with get_worker_info() under workers)."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Examples are the rows of tensors that share dim 0."""

    def __init__(self, *tensors):
        if any(t.shape[0] != tensors[0].shape[0] for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __len__(self):
        return self.tensors[0].shape[0]

    def __getitem__(self, i):
        return tuple(t[i] for t in self.tensors)


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other."""

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The examples of `dataset` at `indices`, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Map-style datasets one after the other."""

    @staticmethod
    def cumsum(sequence):
        """Running totals of the datasets' lengths."""
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        if idx >= len(self):
            raise IndexError(f"index {idx} is out of range for a dataset of {len(self)} examples")
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[d][idx if d == 0 else idx - self.cumulative_sizes[d - 1]]


def random_split(dataset, lengths, generator=None):
    """Splits a dataset into non-overlapping Subsets of the given lengths (or fractions summing to 1)."""
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):  # the remainder, one each, round robin
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = _C.randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end]) for end, length in zip(itertools.accumulate(lengths), lengths)]


# ----------------------------------------------------------------------------------------- samplers

def _random_seed(generator=None):
    """A 63-bit seed drawn from `generator` (the default generator when None)."""
    hi, lo = _C.randint(0, 2**32, (2,), generator=generator).tolist()
    return ((hi >> 1) << 32) | lo


class Sampler:
    """Base class of the iterables of dataset indices (or of index lists, for batch samplers)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices (or num_samples draws with replacement) from `generator`."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        """How many indices one pass yields (len(data_source) unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        generator = self.generator
        if generator is None:  # a private generator seeded from the default one, as torch does
            generator = _C.Generator()
            generator.manual_seed(_random_seed())
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _C.randint(0, n, (32,), generator=generator).tolist()
            yield from _C.randint(0, n, (self.num_samples % 32,), generator=generator).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from _C.randperm(n, generator=generator).tolist()
            yield from _C.randperm(n, generator=generator).tolist()[:self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _C.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """num_samples indices in [0, len(weights)), index i drawn with probability weights[i] / sum(weights)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        import numpy as np
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        w = np.array(weights.tolist() if isinstance(weights, _C.Tensor) else weights, dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = _C.tensor(w)
        self._w = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        import numpy as np
        w, k = self._w, self.num_samples
        if not np.all(np.isfinite(w)) or np.any(w < 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not w.sum() > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and k > w.size:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        u = _C.rand(k if self.replacement else w.size, generator=self.generator, dtype=_C.dtype.float64).numpy()
        if self.replacement:  # inverse CDF: u * total falls in index i's slice of the running sum
            cdf = np.cumsum(w)
            idx = np.minimum(np.searchsorted(cdf, u * cdf[-1], side="right"), w.size - 1)
        else:  # exponential race: the k smallest of -log(u) / w are a weighted draw without replacement (zero
            # weights last, as torch draws them once the others are used up)
            with np.errstate(divide="ignore"):
                keys = np.where(w > 0, -np.log1p(-u) / w, np.inf)
            idx = np.argsort(keys, kind="stable")[:k]
        yield from idx.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of `sampler` into lists of batch_size (the last one shorter unless drop_last)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size


class DistributedSampler(Sampler):
    """The indices of a dataset that this rank reads (torch.utils.data.DistributedSampler).

    Every rank draws the same permutation, keyed by (seed, epoch) only, pads it by repeating its
    start to a multiple of num_replicas (or cuts it, with drop_last), and takes positions rank,
    rank + num_replicas, ... of it: the ranks together cover the dataset once per epoch. Call
    set_epoch(e) before each epoch for a new order. num_replicas and rank default to the world
    size and rank of the default process group (RuntimeError when there is none).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        from genesis import distributed
        if num_replicas is None:
            num_replicas = distributed.get_world_size()
        if rank is None:
            rank = distributed.get_rank()
        if num_replicas < 1 or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas, self.rank = int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last = bool(shuffle), int(seed), bool(drop_last)
        self.epoch = 0
        n = dataset if isinstance(dataset, int) else len(dataset)
        self._impl = _C.distributed.DistributedSampler(n, self.num_replicas, self.rank, self.shuffle, self.seed,
                                                       self.drop_last)
        self.num_samples = self._impl.num_samples()
        self.total_size = self.num_samples * self.num_replicas

    def set_epoch(self, epoch):
        """Sets the epoch, which changes the permutation when shuffling."""
        self.epoch = int(epoch)
        self._impl.set_epoch(self.epoch)

    def __iter__(self):
        return iter(self._impl.indices())

    def __len__(self):
        return self.num_samples


class _EpochRandomSampler(RandomSampler):
    """DataLoader(shuffle=True)'s order without a generator: epoch e's permutation depends on (seed, e) only,
    the C++ DataLoader's (sharded over num_replicas as it shards)."""

    def __init__(self, data_source, seed, num_replicas=1, rank=0):
        super().__init__(data_source)
        self._dist = DistributedSampler(len(data_source), num_replicas, rank, shuffle=True, seed=seed)
        self._num_samples = self._dist.num_samples

    def set_epoch(self, epoch):
        """Sets the epoch whose permutation the next pass yields."""
        self._dist.set_epoch(epoch)

    def __iter__(self):
        return iter(self._dist)


class _InfiniteConstantSampler(Sampler):
    """None forever: the index 'sampler' of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


# ----------------------------------------------------------------------------------------- collation

_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _numpy_kind(elem):
    """'array', 'scalar', 'string' (NumPy strings and objects, left alone) or None for a non-NumPy value."""
    np = sys.modules.get("numpy")
    if np is None:
        return None
    if isinstance(elem, np.ndarray):
        return "string" if elem.dtype.kind in "SaUO" else "array"
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return "scalar"
    return None


def _from_numpy(a):
    """A genesis tensor with the data and dtype of a NumPy array."""
    a = sys.modules["numpy"].asarray(a)
    return _C.as_tensor(a if a.flags.c_contiguous else a.copy())


def default_collate(batch):
    """Stacks a list of examples into a batch: tensors, NumPy arrays and numbers become tensors with a leading
    batch dim; tuples, lists, dicts and named tuples are collated field by field; strings stay a list."""
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, _C.Tensor):
        return _C.stack(list(batch), 0)
    kind = _numpy_kind(elem)
    if kind == "array":
        np = sys.modules["numpy"]
        if all(b.shape == elem.shape for b in batch):
            return _from_numpy(np.stack(batch))
        return _C.stack([_from_numpy(b) for b in batch], 0)  # raises the shape error
    if kind == "string":
        raise TypeError(_COLLATE_ERROR.format(elem.dtype))
    if kind == "scalar":
        return _from_numpy(sys.modules["numpy"].array(batch))
    if isinstance(elem, float):
        return _C.tensor(list(batch), dtype=_C.dtype.float64)
    if isinstance(elem, int):
        return _C.tensor(list(batch))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:  # the mapping type may not take a dict
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(e) != size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]  # a list, as torch returns
        try:
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:  # the sequence type may not take a list (e.g. range)
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_COLLATE_ERROR.format(elem_type))


def default_convert(data):
    """One example without batching: NumPy arrays and scalars become tensors, containers are converted field by
    field, everything else is left as it is."""
    kind = _numpy_kind(data)
    if kind in ("array", "scalar"):
        return _from_numpy(data)
    if isinstance(data, (_C.Tensor, str, bytes)) or kind == "string":
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence):
        try:
            return type(data)([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


# ----------------------------------------------------------------------------------------- fetching

class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if getitems else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def _create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    return (_IterableFetcher if iterable else _MapFetcher)(dataset, auto_collation, collate_fn, drop_last)


# ----------------------------------------------------------------------------------------- workers

class WorkerInfo:
    """What a worker process knows about itself: id, num_workers, seed and its copy of the dataset."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


_worker_info = None


def get_worker_info():
    """This worker process's WorkerInfo inside a DataLoader worker, None in the main process."""
    return _worker_info


class _ExceptionWrapper:
    """An exception of a worker, sent to the main process and raised there with the worker's traceback."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.exc_msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:  # KeyError shows its message's repr: keep the lines readable
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except TypeError:  # an exception type whose constructor takes something else
            raise RuntimeError(msg) from None
        try:
            raise exception
        finally:
            del exception  # no frame -> exception -> traceback -> frame cycle: the iterator is freed with it


class _KeyErrorMessage(str):
    def __repr__(self):
        return self


class _IterableDatasetStopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    pass


_STATUS_CHECK_INTERVAL = 1.0  # seconds between checks that the parent (in a worker) or the workers are alive


def _seed_worker(base_seed, worker_id):
    seed = (base_seed + worker_id) % 2**63
    random.seed(seed)
    _C.manual_seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                 base_seed, init_fn, worker_id, num_workers):
    """A worker process: fetches and collates the batches whose indices arrive on index_queue and puts them,
    pickled (tensors as NumPy arrays), on data_queue."""
    global _worker_info
    try:
        import genesis
        if hasattr(genesis, "set_num_threads"):
            genesis.set_num_threads(1)
        seed = _seed_worker(base_seed, worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_exception, fetcher = None, None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = _create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = _ExceptionWrapper(where)
        iteration_end = False
        parent = os.getppid()
        # Ends on the final signal (None), on done_event (set at shutdown: the main process may be past
        # sending anything, e.g. when its iterator is collected as part of a reference cycle) or when the
        # main process is gone.
        while os.getppid() == parent and not done_event.is_set():
            try:
                r = index_queue.get(timeout=_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):  # a persistent worker's next epoch
                data_queue.put((r, None))
                iteration_end = False
                try:
                    fetcher = _create_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_exception = _ExceptionWrapper(where)
                continue
            if r is None or done_event.is_set():
                break
            if iteration_end:
                continue  # wait for the final signal
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = pickle.dumps(fetcher.fetch(index), protocol=pickle.HIGHEST_PROTOCOL)
                except Exception as e:
                    if isinstance(e, StopIteration) and iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = _ExceptionWrapper(where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:  # the main process raises it too
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()


# ----------------------------------------------------------------------------------------- iterators

class _SingleProcessIter:
    """Batches fetched in the main process."""

    def __init__(self, loader):
        self._loader = loader
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = _create_fetcher(loader._iterable, loader.dataset, loader._auto_collation, loader.collate_fn,
                                        loader.drop_last)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        index = next(self._sampler_iter)
        return self._fetcher.fetch(index)


class _MultiProcessIter:
    """Batches fetched by worker processes, returned in the sampler's order."""

    def __init__(self, loader):
        self._shutdown = True
        self._loader = weakref.ref(loader)  # the loader holds a persistent iterator: no reference cycle
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._iterable = loader._iterable
        ctx = loader.multiprocessing_context or multiprocessing
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        base_seed = _random_seed(loader.generator)
        for i in range(self._num_workers):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            w = ctx.Process(target=_worker_loop, daemon=True,
                            args=(self._iterable, loader.dataset, index_queue, self._result_queue, self._done_event,
                                  loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                                  loader.worker_init_fn, i, self._num_workers))
            w.start()
            self._index_queues.append(index_queue)
            self._workers.append(w)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = 0  # the next task to send
        self._rcvd_idx = 0  # the next task to return
        self._task_info = {}  # task -> (worker,) while outstanding, (worker, data) once received out of order
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_ResumeIteration())
            pending = self._num_workers
            while pending > 0:  # the acknowledgements; results of an unfinished epoch are dropped
                idx, _ = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch):
            self._try_put_index()

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader())

    def _try_put_index(self):
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._worker_cycle)
            if self._workers_status[worker]:
                break
        else:
            return  # every worker is done (iterable datasets)
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _try_get_data(self, timeout):
        try:
            return True, self._result_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for i, w in enumerate(self._workers) if self._workers_status[i] and not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly") from None
            return False, None

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if ok:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data(_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def __next__(self):
        while True:
            while self._rcvd_idx < self._send_idx:  # skip the tasks of workers that ended (iterable datasets)
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_status[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                return self._process(self._task_info.pop(self._rcvd_idx)[1])
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                if self._persistent:
                    self._workers_status[data.worker_id] = False
                else:
                    self._mark_worker_as_unavailable(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                return self._process(data)

    def _process(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, _ExceptionWrapper):
            data.reraise()
        return pickle.loads(data)  # the tensors are built here, in the main process

    def _mark_worker_as_unavailable(self, worker):
        self._index_queues[worker].put(None)
        self._workers_status[worker] = False

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()  # the workers end within _STATUS_CHECK_INTERVAL even if None never reaches them
            for i, w in enumerate(self._workers):
                if w.is_alive():
                    self._index_queues[i].put(None)
            for w in self._workers:
                w.join(timeout=5 * _STATUS_CHECK_INTERVAL)
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._result_queue.cancel_join_thread()
            self._result_queue.close()
        finally:
            for w in self._workers:
                if w.is_alive():
                    w.terminate()

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:  # interpreter shutdown
            pass


# ----------------------------------------------------------------------------------------- DataLoader

class DataLoader:
    """Batches of a dataset (torch.utils.data.DataLoader); iterating runs epoch `epoch` and then advances it.

    shuffle=True without a generator gives epoch e the permutation keyed by (seed, e), the C++
    loader's; num_replicas and rank shard every epoch's order over the ranks (the same split as
    DistributedSampler). set_epoch(e) chooses the next epoch and is passed on to a sampler that has
    set_epoch. pin_memory is accepted and has no effect.
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", seed=0, num_replicas=1, rank=0):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor not in (None, 2):
            raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor <= 0:
            raise ValueError(f"prefetch_factor option should be positive, but got prefetch_factor={prefetch_factor}")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
            if num_replicas != 1:
                raise ValueError("DataLoader with IterableDataset: shard the stream in the dataset (num_replicas "
                                 "is for map-style datasets)")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if (sampler is not None or batch_sampler is not None) and num_replicas != 1:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle and num_replicas")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        self._default_sampler = sampler is None and batch_sampler is None
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle and generator is not None:
                sampler = RandomSampler(dataset, generator=generator)
            elif shuffle:
                sampler = _EpochRandomSampler(dataset, seed, num_replicas, rank)
            elif num_replicas != 1:
                sampler = DistributedSampler(dataset, num_replicas, rank, shuffle=False, seed=seed)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if self._auto_collation else default_convert)
        self.persistent_workers = persistent_workers
        self.seed = seed
        self._epoch = 0
        self._iterator = None
        # TensorDataset with torch's default collation: one index_select per tensor per batch, in the main
        # process, with the C++ loader's order when the order is the default one.
        self._impl = None
        self._fast = (isinstance(dataset, TensorDataset) and type(dataset).__getitem__ is TensorDataset.__getitem__
                      and collate_fn is None and batch_size is not None)
        if self._fast and self._default_sampler and not (shuffle and generator is not None):
            self._impl = _C.data.DataLoader(list(dataset.tensors), batch_size, shuffle, drop_last, seed, num_replicas,
                                            rank)
        self._initialized = True

    @property
    def multiprocessing_context(self):
        """The multiprocessing context the workers start in (None: the default one)."""
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers <= 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading (num_workers "
                                 f"> 0), but got num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            if not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={ctx}")
        self.__multiprocessing_context = ctx

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def set_epoch(self, epoch):
        """Sets the epoch the next iteration runs (and the sampler's, when it has set_epoch)."""
        self._epoch = int(epoch)
        if self._impl is not None:
            self._impl.epoch = self._epoch
        if not self._default_sampler and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __len__(self):
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        if self._impl is not None:
            return len(self._impl)
        return len(self._index_sampler)

    def __iter__(self):
        epoch = self._epoch
        self._epoch = epoch + 1
        if self._impl is not None:
            self._impl.epoch = epoch + 1
        if self._default_sampler and hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)
        if self._fast:
            return self._tensor_batches(epoch)
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def _tensor_batches(self, epoch):
        # The epoch's order comes from the C++ loader (or the sampler) once; each batch is one
        # index_select per field (the rows the C++ loader would copy, so the batches are the same).
        if self._impl is not None:
            indices, n_batches = self._impl.indices(epoch), len(self._impl)
        else:
            indices = [int(i) for i in self.sampler]
            n_batches = len(indices) // self.batch_size if self.drop_last else -(-len(indices) // self.batch_size)
        order = _C.tensor(indices, dtype=_C.dtype.int64)
        tensors = self.dataset.tensors
        orders = {}
        bs = self.batch_size
        for b in range(n_batches):
            batch = []
            for t in tensors:
                dev = t.device
                if dev not in orders:
                    orders[dev] = order.to(dev)
                batch.append(t.index_select(0, orders[dev][b * bs:(b + 1) * bs]))
            yield batch
