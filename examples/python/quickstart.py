"""Quick start: a small network, one training step, autograd on a matmul.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/quickstart.py
"""
import genesis
import genesis.nn as nn
import genesis.optim as optim

# Device: the GPU when there is one
device = genesis.device("cuda" if genesis.cuda_available() else "cpu")

# Tensors with autograd
x = genesis.randn(32, 784, device=device, requires_grad=True)
y = genesis.randn(32, 10, device=device).softmax(-1)  # class probabilities as targets


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)
        return x


model = SimpleNet().to(device)
optimizer = optim.Adam(model.parameters(), lr=0.001)
criterion = nn.CrossEntropyLoss()

for step in range(3):
    output = model(x)
    loss = criterion(output, y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.4f}")

# Autograd on a matmul
a = genesis.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
b = genesis.tensor([[2.0, 0.0], [0.0, 2.0]], requires_grad=True)
z = genesis.matmul(a, b)
z.sum().backward()
print(f"Gradient of a: {a.grad}")
