import pytest

torch = pytest.importorskip("torch")

from seqpoint.workloads import LAMB, make_optimizer  # noqa: E402  (needs torch)


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(4, 3, generator=g)), torch.nn.Parameter(torch.randn(5, generator=g))]


def _grads(step):
    g = torch.Generator().manual_seed(100 + step)
    return [torch.randn(4, 3, generator=g), torch.randn(5, generator=g)]


@pytest.mark.parametrize(
    ("name", "reference"),
    [
        ("adam", lambda ps, lr: torch.optim.Adam(ps, lr=lr, eps=1e-8)),
        ("adamw", lambda ps, lr: torch.optim.AdamW(ps, lr=lr, eps=1e-8, weight_decay=0.01)),
        ("sgd", lambda ps, lr: torch.optim.SGD(ps, lr=lr, momentum=0.9)),
    ],
)
def test_matches_torch_optimizer(name, reference):
    ours, theirs = _params(), _params()
    opt_a, opt_b = make_optimizer(name, ours, 1e-2), reference(theirs, 1e-2)
    for step in range(4):
        for p, q, g in zip(ours, theirs, _grads(step), strict=True):
            p.grad, q.grad = g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
    for p, q in zip(ours, theirs, strict=True):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_lamb_matches_reference_formula():
    ps = _params()
    ref = [p.detach().clone() for p in ps]
    m = [torch.zeros_like(p) for p in ref]
    v = [torch.zeros_like(p) for p in ref]
    opt = LAMB(ps, 1e-2)
    b1, b2, eps, wd, lr = 0.9, 0.999, 1e-6, 0.01, 1e-2
    for step in range(1, 4):
        grads = _grads(step)
        for p, g in zip(ps, grads, strict=True):
            p.grad = g.clone()
        opt.step()
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            u = (m[i] / (1 - b1**step)) / ((v[i] / (1 - b2**step)).sqrt() + eps) + wd * ref[i]
            w_norm, u_norm = ref[i].norm(), u.norm()
            trust = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
            ref[i] = ref[i] - lr * trust * u
    for p, r in zip(ps, ref, strict=True):
        torch.testing.assert_close(p.detach(), r, rtol=1e-5, atol=1e-6)
