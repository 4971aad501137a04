"""The timed Fashion-MNIST training epochs that bench/compare_mlp.py and bench/python/compare_overhead.py run, the
same loop for Genesis and PyTorch (fw is the genesis or the torch module, F its nn.functional)."""
import time


def timed_epochs(fw, F, model, opt, images, labels, batch_size, epochs, perm_fn, syncs_per_epoch=1):
    """Trains model on shuffled batches (perm_fn(n): a permutation per epoch; one index_select per batch; the loss
    summed on the device and read on the host syncs_per_epoch times). Returns (each epoch's seconds, the last epoch's
    summed loss tensor)."""
    n, bs = images.shape[0], batch_size
    nb = (n + bs - 1) // bs
    times = []
    for _ in range(epochs):
        model.train()
        t0 = time.perf_counter()
        perm = perm_fn(n)
        loss_sum = fw.zeros(())
        for b in range(nb):
            idx = perm[b * bs:(b + 1) * bs]
            x, y = images.index_select(0, idx), labels.index_select(0, idx)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            with fw.no_grad():
                loss_sum += loss.detach() * y.shape[0]
            if (b + 1) % max(1, nb // syncs_per_epoch) == 0 or b + 1 == nb:
                loss_sum.item()
        times.append(time.perf_counter() - t0)
    return times, loss_sum
