"""A tiny chat model made here from nothing downloaded, for a real inference server in the tests.

Production judges talk to vLLM / llm-d; the suite runs llama.cpp's own ``llama-server``
(``tests/support/llama_server.py``) on a model this module makes from scratch in well under a minute on one CPU
core:

- a byte-level BPE tokenizer (GPT-2 byte alphabet and pre-tokenizer, ChatML control tokens), trained here on the
  synthetic corpus below;
- a Llama-architecture decoder (RMSNorm, rotary positions, SwiGLU; 64 wide, 2 layers) with random weights, briefly
  trained with torch on synthetic judge and guidance conversations in ChatML, so that under the server's
  structured output (``response_format`` ``json_schema``) its numbers are short and in range, its strings end, and
  distinct seeds give distinct answers;
- written as GGUF with the ``gguf`` package: tensor names and metadata as llama.cpp's converter writes them, the
  ChatML chat template, the tokenizer in the ``gpt2`` format with the ``gpt-2`` pre-tokenizer;
- optionally a multimodal projector GGUF (``mmproj``): a LLaVA-style CLIP vision tower (patch embedding, 2
  pre-norm ViT blocks, a 2-layer MLP projector into the text model's width), random weights, as llama.cpp's
  ``tools/mtmd`` loads it (``clip.projector_type`` ``mlp``). The projector's output is scaled down so images
  barely move the text model: it reads the pixels for real but answers like the text-only model.

The model knows nothing about Zelda; its verdicts are noise in the right shape. It proves the protocol, not the
judgement (``bench/bench_judges.py`` measures judgement). ``scale=10`` makes a model that scores "out of 10"
like a model that ignored the rubric: llama.cpp does not enforce a schema's ``minimum``/``maximum`` on numbers,
so its votes reach the judges out of range, which is what the invalid-vote tests need from a real server.

Files are cached under ``~/.cache/zelda-rlaif/tiny-llm/<hash of this file and the options>/`` (``XDG_CACHE_HOME``
and ``ZELDA_TEST_CACHE`` move it); a second run reuses them. By hand::

    python -m tests.support.tiny_llm               # prints the paths of the model and its projector
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import itertools
import json
import math
import random
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.support.cache import cache_root, locked

CHAT_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# GPT-2's pre-tokenizer (llama.cpp's "gpt-2" pre-tokenizer type); \p{L} and \p{N} spelled for Python's re.
PRETOKENIZER = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?(?:[^\s\w]|_)+|\s+(?!\S)|\s+""")
SPECIAL_SPLIT = re.compile("(" + "|".join(re.escape(s) for s in SPECIALS) + ")")


@dataclass(frozen=True)
class TinyConfig:
    """What the made model is; every field is part of the cache key."""

    vocab_size: int = 1024
    n_embd: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_ff: int = 192
    context_length: int = 8192
    rope_base: float = 10000.0
    rms_eps: float = 1e-5
    train_steps: int = 300
    batch_tokens: int = 2048  # prompt and answer tokens per training batch
    seed: int = 0
    scale: float = 1.0  # scores are drawn in [0, scale]; 10 makes a model that ignores the rubric's [0, 1]

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head


# A model that scores out of 10: its votes follow the schema's shape but not its range, like a model that ignored
# the rubric (tests/llm/conftest.py's unruly_llm).
UNRULY = TinyConfig(scale=10.0)


# Tokenizer


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's map of the 256 bytes to printable characters (what byte-level BPE vocabularies are written in)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = list(printable)
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


BYTE_CHARS = bytes_to_unicode()


def _pieces(text: str) -> Iterator[str]:
    """Pre-tokenized pieces of ordinary text, each in the byte alphabet."""
    for piece in PRETOKENIZER.findall(text):
        yield "".join(BYTE_CHARS[b] for b in piece.encode("utf-8"))


class Tokenizer:
    def __init__(self, merges: Sequence[tuple[str, str]]) -> None:
        self.merges = list(merges)
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.tokens = [*SPECIALS, *BYTE_CHARS.values(), *(a + b for a, b in self.merges)]
        self.ids = {token: index for index, token in enumerate(self.tokens)}
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def train(cls, texts: Sequence[str], vocab_size: int) -> Tokenizer:
        """Byte-level BPE: repeatedly merge the most frequent adjacent pair within pre-tokenized pieces."""
        words: collections.Counter[tuple[str, ...]] = collections.Counter()
        for text in texts:
            for part in SPECIAL_SPLIT.split(text):
                if part and part not in SPECIALS:
                    words.update(tuple(piece) for piece in _pieces(part))
        merges: list[tuple[str, str]] = []
        vocab = [list(word) for word in words]
        counts = list(words.values())
        while len(SPECIALS) + len(BYTE_CHARS) + len(merges) < vocab_size:
            pairs: collections.Counter[tuple[str, str]] = collections.Counter()
            for symbols, count in zip(vocab, counts, strict=True):
                for pair in itertools.pairwise(symbols):
                    pairs[pair] += count
            if not pairs:
                break
            best = max(pairs.items(), key=lambda item: (item[1], item[0]))[0]
            merges.append(best)
            joined = best[0] + best[1]
            for symbols in vocab:
                i = 0
                while i < len(symbols) - 1:
                    if symbols[i] == best[0] and symbols[i + 1] == best[1]:
                        symbols[i:i + 2] = [joined]
                    i += 1
        return cls(merges)

    @classmethod
    def from_gguf(cls, path: Path) -> Tokenizer:
        """The tokenizer a made model file carries (its merges in order)."""
        import gguf

        field = gguf.GGUFReader(str(path)).fields["tokenizer.ggml.merges"]
        merges = [bytes(field.parts[i]).decode("utf-8").split(" ", 1) for i in field.data]
        return cls([(a, b) for a, b in merges])

    def _bpe(self, piece: str) -> list[int]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        symbols = list(piece)
        while len(symbols) > 1:
            ranked = [(self.ranks.get(pair, math.inf), i) for i, pair in enumerate(itertools.pairwise(symbols))]
            rank, i = min(ranked)
            if rank == math.inf:
                break
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        ids = [self.ids[s] for s in symbols]
        self._cache[piece] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; ChatML control tokens written in it are single tokens (as llama.cpp parses a
        rendered chat template)."""
        ids: list[int] = []
        for part in SPECIAL_SPLIT.split(text):
            if part in SPECIALS:
                ids.append(self.ids[part])
            elif part:
                for piece in _pieces(part):
                    ids.extend(self._bpe(piece))
        return ids


# Synthetic conversations

JUDGES: dict[str, tuple[tuple[str, ...], str]] = {
    # kind -> (dimensions, what the system prompt says the kind judges)
    "state": (("progress", "dialog", "efficiency"), "progress, dialog and efficiency"),
    "puzzle": (("puzzle",), "puzzle-solving"),
    "vision": (("novelty",), "novelty and exploration"),
}
BUTTONS = ("nop", "up", "down", "left", "right", "a", "b", "start")
_EVIDENCE = (
    "the player entered {n} new rooms", "health fell from {a} to {b}", "no text box was opened",
    "a text box was read at step {s}", "the player was stuck against a wall for {n} steps",
    "START was pressed {n} times", "rupees went from {a} to {b}", "a small key was used on a door",
    "a puzzle flag was set at step {s}", "the same two rooms were revisited", "the frames show a new area",
    "nothing changed in this segment", "the sword hit an enemy", "the player walked in circles",
)
_REASONS = (
    "an unvisited doorway is {d}", "a text box is open", "the menu is open", "an enemy is in front",
    "walk {d} to explore", "talk to the person {d}", "the way {d} is blocked", "line up with the doorway",
)


def _facts(rng: random.Random, lines: int) -> str:
    """A user message shaped like a judge's segment summary (numbers and names, no meaning)."""
    def rooms() -> str:
        return " -> ".join(f"{rng.randint(0, 5)}:{rng.randint(0, 255):02X}@{rng.randint(0, 299)}"
                           for _ in range(rng.randint(1, 12)))

    templates = (
        lambda: f"Segment seg-{rng.randint(0, 999):03d}-{rng.randint(0, 9999):04d} (episode "
                f"run-ep{rng.randint(0, 99)}, game testworld): steps {rng.randint(0, 900)}-{rng.randint(900, 2000)} "
                "(300 steps).",
        lambda: f"Rooms entered (group:room@step): {rooms()}; {rng.randint(1, 9)} distinct, {rng.randint(0, 5)} new "
                f"to the episode; {rng.randint(1, 90)} distinct 16px tiles visited.",
        lambda: f"Health (quarter hearts): {rng.randint(0, 12)}/12 -> {rng.randint(0, 12)}/12, lowest "
                f"{rng.randint(0, 12)}, damage taken {rng.randint(0, 12)}, healed {rng.randint(0, 4)}; deaths +0.",
        lambda: f"Rupees {rng.randint(0, 99)}->{rng.randint(0, 99)}; small keys {rng.randint(0, 2)}->"
                f"{rng.randint(0, 2)}; sword level 1->1; essences 0->0; treasure flags +{rng.randint(0, 3)} bits.",
        lambda: f"Text boxes opened: {rng.randint(0, 5)}; steps with text showing: {rng.randint(0, 80)}.",
        lambda: f"START presses: {rng.randint(0, 150)}; steps with a menu open: {rng.randint(0, 160)}.",
        lambda: f"Movement: {rng.randint(0, 300)} steps moved, {rng.randint(0, 200)} stuck (walked without moving, "
                f"longest run {rng.randint(0, 99)}); most enemies on screen: {rng.randint(0, 4)}.",
        lambda: "Changes (step:what before->after): " + "; ".join(
            f"{rng.randint(0, 299)}:{rng.choice(('health', 'rupees', 'keys', 'room'))} {rng.randint(0, 20)}->"
            f"{rng.randint(0, 20)}" for _ in range(rng.randint(1, 30))) + ".",
        lambda: "Actions: " + ", ".join(f"{b} {rng.randint(0, 150)}" for b in rng.sample(BUTTONS, 4)) + ".",
        lambda: "Puzzle and door flags (step:flag before->after): " + "; ".join(
            f"{rng.randint(0, 299)}:puzzle_flags 0x{rng.randint(0, 255):02X}->0x{rng.randint(0, 255):02X}"
            for _ in range(rng.randint(0, 6))) + ".",
        lambda: f"Position x={rng.randint(0, 160)}, y={rng.randint(0, 144)}, facing {rng.choice(('up', 'down'))}; "
                f"neighbours: up: room 0x{rng.randint(0, 255):02X} (not visited yet), left: none.",
        lambda: f"Attached frames, in order, are the screens at steps {rng.randint(0, 100)}, {rng.randint(100, 299)}.",
    )
    return "\n".join(rng.choice(templates)() for _ in range(lines))


def _number(rng: random.Random, scale: float) -> str:
    if scale > 1:  # "out of 10": never below 2, so every vote of such a model is out of [0, 1]
        return f"{rng.uniform(2, scale - 0.1):.1f}"
    value = rng.random()
    return rng.choice((f"{value:.2f}", f"{value:.1f}", f"{value:.2f}"))


def _sentence(rng: random.Random, options: Sequence[str], parts: int) -> str:
    said = [rng.choice(options).format(n=rng.randint(1, 60), a=rng.randint(0, 12), b=rng.randint(0, 12),
                                       s=rng.randint(0, 299), d=rng.choice(("up", "down", "left", "right")))
            for _ in range(parts)]
    text = "; ".join(said)
    return text[0].upper() + text[1:] + "."


def conversations(count: int, *, scale: float = 1.0, seed: int = 0) -> list[tuple[str, str]]:
    """``count`` (prompt, answer) pairs in ChatML: judge votes of every kind and guidance suggestions."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        lines = rng.choice((3, 4, 6, 8, 10, 12, 16, 24, 40))
        if rng.random() < 0.8:
            kind = rng.choice(list(JUDGES))
            dimensions, what = JUDGES[kind]
            system = (f"You are the {kind} judge for a reinforcement-learning agent playing The Legend of Zelda. "
                      f"Score {what} from 0.0 to 1.0. Answer with one JSON object with the keys "
                      + ", ".join(dimensions) + ", rationale and nothing else.")
            answer = ("{" + ", ".join(f'"{d}": {_number(rng, scale)}' for d in dimensions)
                      + f', "rationale": "{_sentence(rng, _EVIDENCE, rng.randint(1, 2))}"' + "}")
        else:
            system = ("You coach a player of a top-down Zelda-like Game Boy adventure. Choose the single button to "
                      "press next and give the reason in one short line.")
            answer = json.dumps({"action": rng.choice(BUTTONS), "reason": _sentence(rng, _REASONS, 1)})
        user = ("Current state:\n" if "coach" in system else "") + _facts(rng, lines)
        prompt = (f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
                  "<|im_start|>assistant\n")
        pairs.append((prompt, answer + "<|im_end|>"))
    return pairs


# Model


def _rope(x: Any, base: float) -> Any:
    """Rotary positions on adjacent pairs (x0, x1), (x2, x3), ...: llama.cpp's layout for the llama architecture,
    so no weight permutation is needed on export."""
    import torch

    _, _, length, dim = x.shape
    inv = base ** (-torch.arange(0, dim, 2, dtype=torch.float32) / dim)
    angles = torch.arange(length, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = angles.cos(), angles.sin()
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def _build(config: TinyConfig) -> Any:
    import torch
    from torch import nn

    class RMSNorm(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.ones(config.n_embd))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + config.rms_eps) * self.weight

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            e, f = config.n_embd, config.n_ff
            self.attn_norm, self.ffn_norm = RMSNorm(), RMSNorm()
            self.attn_q, self.attn_k, self.attn_v, self.attn_output = (nn.Linear(e, e, bias=False) for _ in range(4))
            self.ffn_gate, self.ffn_up = nn.Linear(e, f, bias=False), nn.Linear(e, f, bias=False)
            self.ffn_down = nn.Linear(f, e, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, e = x.shape
            h = self.attn_norm(x)
            q, k, v = (proj(h).view(b, t, config.n_head, config.head_dim).transpose(1, 2)
                       for proj in (self.attn_q, self.attn_k, self.attn_v))
            q, k = _rope(q, config.rope_base), _rope(k, config.rope_base)
            attended = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_output(attended.transpose(1, 2).reshape(b, t, e))
            h = self.ffn_norm(x)
            return x + self.ffn_down(nn.functional.silu(self.ffn_gate(h)) * self.ffn_up(h))

    class Llama(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.token_embd = nn.Embedding(config.vocab_size, config.n_embd)
            self.blocks = nn.ModuleList(Block() for _ in range(config.n_layer))
            self.output_norm = RMSNorm()
            self.output = nn.Linear(config.n_embd, config.vocab_size, bias=False)

        def hidden(self, ids: torch.Tensor) -> torch.Tensor:
            x = self.token_embd(ids)
            for block in self.blocks:
                x = block(x)
            return x

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            return self.output(self.output_norm(self.hidden(ids)))

    torch.manual_seed(config.seed)
    return Llama()


def train(config: TinyConfig, tokenizer: Tokenizer, pairs: Sequence[tuple[str, str]]) -> Any:
    """The model after ``config.train_steps`` AdamW steps on the answers (the prompts are context, not targets)."""
    import torch

    model = _build(config)
    examples = []
    for prompt, answer in pairs:
        context, target = tokenizer.encode(prompt), tokenizer.encode(answer)
        examples.append((context + target, len(context)))
    # Batches of neighbours in length: little padding (most of the cost is reading the prompts).
    examples.sort(key=lambda example: len(example[0]))
    rng = random.Random(config.seed)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    warmup = max(1, config.train_steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: min(1.0, (step + 1) / warmup) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, step / config.train_steps))))
    for _ in range(config.train_steps):
        first = rng.randrange(len(examples))
        size = max(1, config.batch_tokens // len(examples[first][0]))  # long prompts come fewer at a time
        batch = examples[max(0, first - size + 1):first + 1]
        length = max(len(tokens) for tokens, _ in batch)
        ids = torch.zeros((len(batch), length), dtype=torch.long)
        rows: list[int] = []
        columns: list[int] = []
        targets: list[int] = []
        for row, (tokens, start) in enumerate(batch):
            ids[row, :len(tokens)] = torch.tensor(tokens)
            rows += [row] * (len(tokens) - start)
            columns += range(start - 1, len(tokens) - 1)
            targets += tokens[start:]
        hidden = model.hidden(ids)[torch.tensor(rows), torch.tensor(columns)]  # logits of answer tokens only
        loss = torch.nn.functional.cross_entropy(model.output(model.output_norm(hidden)), torch.tensor(targets))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
    model.final_loss = float(loss.detach())
    return model


# GGUF


def write_model(path: Path, config: TinyConfig, tokenizer: Tokenizer, model: Any) -> None:
    import gguf

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("zelda-rlaif tiny judge (random weights, synthetic answers)")
    writer.add_context_length(config.context_length)
    writer.add_embedding_length(config.n_embd)
    writer.add_block_count(config.n_layer)
    writer.add_feed_forward_length(config.n_ff)
    writer.add_head_count(config.n_head)
    writer.add_head_count_kv(config.n_head)
    writer.add_rope_dimension_count(config.head_dim)
    writer.add_rope_freq_base(config.rope_base)
    writer.add_layer_norm_rms_eps(config.rms_eps)
    writer.add_vocab_size(config.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    writer.add_token_list(tokenizer.tokens)
    writer.add_token_types([gguf.TokenType.CONTROL if t in SPECIALS else gguf.TokenType.NORMAL
                            for t in tokenizer.tokens])
    writer.add_token_merges([f"{a} {b}" for a, b in tokenizer.merges])
    writer.add_bos_token_id(tokenizer.ids["<|endoftext|>"])
    writer.add_eos_token_id(tokenizer.ids["<|im_end|>"])
    writer.add_pad_token_id(tokenizer.ids["<|endoftext|>"])
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    def tensor(name: str, value: Any) -> None:
        writer.add_tensor(name, value.detach().numpy().astype(np.float32))

    tensor("token_embd.weight", model.token_embd.weight)
    for index, block in enumerate(model.blocks):
        for part in ("attn_norm", "ffn_norm"):
            tensor(f"blk.{index}.{part}.weight", getattr(block, part).weight)
        for part in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"):
            tensor(f"blk.{index}.{part}.weight", getattr(block, part).weight)
    tensor("output_norm.weight", model.output_norm.weight)
    tensor("output.weight", model.output.weight)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


@dataclass(frozen=True)
class ProjectorConfig:
    image_size: int = 32  # every image is resized to this square
    patch_size: int = 16  # (32 / 16)^2 = 4 image tokens per image
    n_embd: int = 32
    n_head: int = 2
    n_ff: int = 64  # not n_embd: llama.cpp would take equal sizes for an old export with swapped up/down
    n_layer: int = 2  # LLaVA reads the features of the second-to-last block
    output_gain: float = 0.01  # image embeddings this small leave the text model's answers in shape


def write_projector(path: Path, config: ProjectorConfig, text_embd: int, seed: int = 0) -> None:
    """A LLaVA-1.5-style projector GGUF with random weights (what ``clip.cpp`` loads for ``projector_type`` mlp)."""
    import gguf

    rng = np.random.default_rng(seed)

    def weights(*shape: int, gain: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * gain / math.sqrt(shape[-1])).astype(np.float32)

    e, f = config.n_embd, config.n_ff
    writer = gguf.GGUFWriter(str(path), "clip")
    writer.add_name("zelda-rlaif tiny vision projector (random weights)")
    writer.add_bool("clip.has_vision_encoder", True)
    writer.add_string("clip.projector_type", "mlp")
    writer.add_uint32("clip.vision.image_size", config.image_size)
    writer.add_uint32("clip.vision.patch_size", config.patch_size)
    writer.add_uint32("clip.vision.embedding_length", e)
    writer.add_uint32("clip.vision.feed_forward_length", f)
    writer.add_uint32("clip.vision.block_count", config.n_layer)
    writer.add_uint32("clip.vision.projection_dim", text_embd)
    writer.add_uint32("clip.vision.attention.head_count", config.n_head)
    writer.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    writer.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    writer.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    patches = (config.image_size // config.patch_size) ** 2
    writer.add_tensor("v.patch_embd.weight", weights(e, 3, config.patch_size, config.patch_size))
    writer.add_tensor("v.position_embd.weight", weights(patches, e))
    for index in range(config.n_layer):
        block = f"v.blk.{index}"
        for part in ("attn_q", "attn_k", "attn_v", "attn_out"):
            writer.add_tensor(f"{block}.{part}.weight", weights(e, e))
            writer.add_tensor(f"{block}.{part}.bias", np.zeros(e, np.float32))
        for part in ("ln1", "ln2"):
            writer.add_tensor(f"{block}.{part}.weight", np.ones(e, np.float32))
            writer.add_tensor(f"{block}.{part}.bias", np.zeros(e, np.float32))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(f, e))
        writer.add_tensor(f"{block}.ffn_up.bias", np.zeros(f, np.float32))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(e, f))
        writer.add_tensor(f"{block}.ffn_down.bias", np.zeros(e, np.float32))
    writer.add_tensor("mm.0.weight", weights(text_embd, e))
    writer.add_tensor("mm.0.bias", np.zeros(text_embd, np.float32))
    writer.add_tensor("mm.2.weight", weights(text_embd, text_embd, gain=config.output_gain))
    writer.add_tensor("mm.2.bias", np.zeros(text_embd, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# Cache


@dataclass(frozen=True)
class TinyModel:
    model: Path
    mmproj: Path
    config: TinyConfig
    seconds: float  # what making it took (0 when it came from the cache)


def make(config: TinyConfig = TinyConfig(), directory: Path | None = None) -> TinyModel:
    """The model and projector files for ``config``: from the cache, or made now (tens of seconds) and cached."""
    key = hashlib.sha256(Path(__file__).read_bytes() + json.dumps(asdict(config), sort_keys=True).encode())
    directory = directory or cache_root() / "tiny-llm" / key.hexdigest()[:16]
    model_path, mmproj_path = directory / "tiny-llm.gguf", directory / "tiny-llm-mmproj.gguf"
    with locked(directory):
        if model_path.exists() and mmproj_path.exists():
            return TinyModel(model_path, mmproj_path, config, 0.0)
        started = time.perf_counter()
        pairs = conversations(2000, scale=config.scale, seed=config.seed)
        tokenizer = Tokenizer.train([prompt + answer for prompt, answer in pairs[:400]], config.vocab_size)
        model = train(config, tokenizer, pairs)
        for path, write in ((model_path, lambda p: write_model(p, config, tokenizer, model)),
                            (mmproj_path, lambda p: write_projector(p, ProjectorConfig(), config.n_embd))):
            partial = path.with_suffix(".partial")
            write(partial)
            partial.replace(path)
        (directory / "made.json").write_text(json.dumps(
            {"config": asdict(config), "final_loss": model.final_loss, "seconds": time.perf_counter() - started},
            indent=2))
        return TinyModel(model_path, mmproj_path, config, time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="scores drawn in [0, SCALE] (10: out of range)")
    parser.add_argument("--steps", type=int, default=TinyConfig.train_steps, help="training steps")
    args = parser.parse_args()
    made = make(TinyConfig(scale=args.scale, train_steps=args.steps))
    print(json.dumps({"model": str(made.model), "mmproj": str(made.mmproj), "seconds": round(made.seconds, 1)}))


if __name__ == "__main__":
    main()
