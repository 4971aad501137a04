"""Mixed precision: an autocast region and a GradScaler around a training step.
On the CPU the region computes matmuls in bfloat16; on CUDA in float16 (or bfloat16).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/amp.py
"""
import genesis
import genesis.nn as nn
import genesis.optim as optim

device = "cuda" if genesis.cuda.is_available() else "cpu"
genesis.manual_seed(0)
model = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 10)).to(device)
optimizer = optim.AdamW(model.parameters(), lr=1e-3)
criterion = nn.CrossEntropyLoss()
scaler = genesis.amp.GradScaler(enabled=device == "cuda")  # loss scaling matters for float16 gradients
inputs, targets = genesis.randn(256, 64, device=device), genesis.randint(0, 10, (256,), device=device)

for step in range(20):
    with genesis.autocast(device, dtype=genesis.bfloat16):
        outputs = model(inputs)  # bfloat16 matmuls
        loss = criterion(outputs, targets)  # the loss in float32
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    if step % 5 == 0 or step == 19:
        print(f"step {step}: loss {loss.item():.4f} (outputs {outputs.dtype})")
