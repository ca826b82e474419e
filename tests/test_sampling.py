"""The nucleus sampler: the same nucleus as transformers' top-p warper, seeded draws, hand values."""

from __future__ import annotations

import math

import pytest
import torch
from transformers.generation.logits_process import TopPLogitsWarper

from fqa_analysis.models.sampling import NucleusSampler, nucleus_pick


def _draws(scores: torch.Tensor, top_p: float, seed: int = 0, **kw: object) -> torch.Tensor:
    picks: torch.Tensor = nucleus_pick(scores, top_p, torch.Generator().manual_seed(seed), **kw)  # type: ignore[arg-type]
    return picks


def test_draws_stay_in_the_nucleus_at_its_renormalised_frequencies() -> None:
    # p = 0.5, 0.3, 0.15, 0.05: top_p 0.8 keeps tokens 0 and 1 (0.5 + 0.3 reaches 0.8)
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05])).repeat(20_000, 1)
    picks = _draws(logits, 0.8)
    assert set(picks.tolist()) == {0, 1}
    assert float((picks == 0).float().mean()) == pytest.approx(0.5 / 0.8, abs=0.01)
    # a hair more mass takes the third token in, at 0.15 / 0.95
    picks = _draws(logits, 0.81)
    assert set(picks.tolist()) == {0, 1, 2}
    assert float((picks == 2).float().mean()) == pytest.approx(0.15 / 0.95, abs=0.01)


def test_the_nucleus_is_the_one_transformers_keeps() -> None:
    torch.manual_seed(0)
    # peaked and flat rows; banned tokens at -inf as no-repeat n-grams leave them
    scores = torch.cat([torch.randn(40, 500) * 30, torch.randn(40, 500) * 0.3])
    scores[:, :7] = float("-inf")
    hf = TopPLogitsWarper(top_p=0.9)(torch.zeros(80, 1, dtype=torch.long), scores.clone())
    allowed = [set(torch.nonzero(row > float("-inf")).flatten().tolist()) for row in hf]
    many = scores.repeat_interleave(300, dim=0)
    picks = _draws(many, 0.9, first_k=4).view(80, 300)  # first_k 4: every row widens its search
    for row, keep in zip(picks, allowed, strict=True):
        assert set(row.tolist()) <= keep
    # rows whose nucleus is one token: every draw is that token
    single = [i for i, keep in enumerate(allowed) if len(keep) == 1]
    assert single and all(set(picks[i].tolist()) == allowed[i] for i in single)
    # flat rows: hundreds of tokens in the nucleus, and the draws spread over them
    assert min(len(allowed[i]) for i in range(40, 80)) > 300
    assert min(len(set(picks[i].tolist())) for i in range(40, 80)) > 100


def test_the_search_width_and_finished_rows_leave_the_other_draws_alone() -> None:
    torch.manual_seed(1)
    scores = torch.randn(16, 300)
    base = _draws(scores, 0.9, seed=5)
    assert torch.equal(base, _draws(scores, 0.9, seed=5))  # seeded
    assert torch.equal(base, _draws(scores, 0.9, seed=5, first_k=300))  # width changes nothing
    assert not torch.equal(base, _draws(scores, 0.9, seed=6))
    finished = torch.zeros(16, dtype=torch.bool)
    finished[::2] = True
    picks = _draws(scores, 0.9, seed=5, finished=finished)
    assert torch.equal(picks[1::2], base[1::2])
    assert torch.equal(picks[::2], scores[::2].argmax(dim=-1))


def test_the_sampler_leaves_only_the_drawn_token_to_greedy_decoding() -> None:
    sampler = NucleusSampler(0.9, seed=3, end_ids=(2,))
    scores = torch.log(torch.tensor([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]))
    out = sampler(torch.tensor([[0, 1], [0, 2]]), scores)  # row 1 ended with token 2
    assert [int((row == 0).sum()) for row in out] == [1, 1]
    assert int(out[1].argmax()) == 2  # a finished row takes its most probable token
    assert all(math.isinf(float(v)) for row in out for v in row if v != 0)
    with pytest.raises(ValueError, match="top_p"):
        NucleusSampler(0.0, seed=0)
