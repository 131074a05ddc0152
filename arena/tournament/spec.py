"""The tournament spec: one YAML, TOML or JSON file a person writes and the scheduler obeys.

Validation collects every mistake at once and names the field it is about
(``participants[2].bot: unknown bot 'grdy' (did you mean 'greedy'?)``), because a spec
is usually written by hand and fixing one error per run is tedious.  Unknown fields are
errors, not warnings: a misspelt ``gmaes`` silently ignored would run the wrong tournament.

Seeds: with only built-in and local Python bots the deals come from the spec's ``seed``
(default: the name), so a spec is reproducible anywhere.  With a ``remote:`` participant a
seed in the file would let that bot guess it and derive every deal, so the seed is then a
secret drawn for the tournament and kept in its results store (``seed`` is None here and
the secret is attached at run time with :meth:`TournamentSpec.with_secret`); a fixed seed
needs ``public_seed: true``.  Every seed, match id and tie-break of a tournament comes from
:meth:`TournamentSpec.derive`.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import importlib
import json
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from arena.engine import commitment as cm
from arena.match.types import JSON, TimeControl

FORMATS = ("round-robin", "duplicate", "gauntlet", "swiss", "sprt", "league")
EXECUTORS = ("inline", "local", "celery")
SEATINGS = ("all", "latin")
BUILTIN_BOTS = ("random", "greedy")
DEFAULT_DB = "sqlite:///arena.sqlite3"

_NAME_RULE = "must be 1-64 letters, digits, '-', '_' or '.', starting with a letter or digit"
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
_HASH_RE = re.compile(r"^[0-9a-f]{8,64}$")
_MODULE_REF_RE = re.compile(
    r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$"
)

_TOP_FIELDS = (
    "name",
    "seed",
    "public_seed",
    "rules",
    "participants",
    "format",
    "games",
    "sets",
    "max_deals",
    "luck_adjusted",
    "time_control",
    "executor",
    "db",
)
_FORMAT_FIELDS: dict[str, tuple[str, ...]] = {
    "round-robin": ("type",),
    "duplicate": ("type", "seatings"),
    "gauntlet": ("type", "candidate", "seatings"),
    "swiss": ("type", "rounds", "seatings"),
    "sprt": ("type", "candidate", "baseline", "elo0", "elo1", "alpha", "beta", "seatings"),
    "league": ("type", "rounds", "seatings", "poll_s"),
}


class SpecError(ValueError):
    """A spec that cannot be run; ``problems`` lists every ``field: message`` found."""

    def __init__(
        self, problems: Sequence[str], source: str | None = None, warnings: Sequence[str] = ()
    ) -> None:
        self.problems = list(problems)
        self.source = source
        #: What the spec gets wrong without being refused for it (see TournamentSpec).
        self.warnings = list(warnings)
        where = f"{source}: " if source else ""
        if len(self.problems) == 1:
            text = f"{where}{self.problems[0]}"
        else:
            text = f"{where}{len(self.problems)} problems:\n" + "\n".join(
                f"  {p}" for p in self.problems
            )
        super().__init__(text)


@dataclass(frozen=True)
class Participant:
    """A named seat-filler; the name is what ratings and leaderboards show."""

    name: str
    bot: str


@dataclass(frozen=True)
class FormatSpec:
    """How participants are brought together; options not used by ``type`` stay at defaults."""

    type: str = "round-robin"
    seatings: str = "all"
    candidate: str | None = None
    baseline: str | None = None
    rounds: int | None = None
    elo0: float = 0.0
    elo1: float = 20.0
    alpha: float = 0.05
    beta: float = 0.05
    poll_s: float = 5.0


@dataclass(frozen=True)
class ExecutorSpec:
    """Where matches run.  ``workers`` None means one per CPU for the local pool."""

    type: str = "local"
    workers: int | None = None
    broker: str | None = None
    queue: str = "arena"
    routing: str | None = None


@dataclass(frozen=True)
class TournamentSpec:
    """A validated tournament; build one with :func:`load_spec` or :func:`parse_spec`."""

    name: str
    #: The public seed text, or None when the deals come from a secret (see the module).
    seed: str | None
    rules: JSON
    preset: str
    rule_options: JSON
    seats: int
    participants: tuple[Participant, ...]
    format: FormatSpec = field(default_factory=FormatSpec)
    games: int | None = None
    sets: int | None = None
    max_deals: int | None = None
    time_control: TimeControl = field(default_factory=TimeControl)
    executor: ExecutorSpec = field(default_factory=ExecutorSpec)
    db: str = DEFAULT_DB
    source: str | None = None
    #: ``public_seed`` as the file gives it (None: not given).
    public_seed: bool | None = None
    #: An SPRT decides, and a league pairs, on luck-adjusted results (docs/ratings.md).
    luck_adjusted: bool = False
    #: The tournament's secret, from its results store; never part of the spec's JSON.
    deal_secret: str | None = field(default=None, repr=False, compare=False)
    #: Settings the file gives that change nothing (``workers`` for Celery...): said by
    #: ``check`` and ``run``, not refused, since a spec often serves several executors.
    warnings: tuple[str, ...] = field(default=(), repr=False, compare=False)

    # -- seeds ---------------------------------------------------------------------------

    @property
    def secret_seed(self) -> bool:
        """Whether the deals come from a secret rather than a seed in the file."""
        return self.seed is None

    @property
    def has_remote(self) -> bool:
        return any(p.bot.startswith("remote:") for p in self.participants)

    @property
    def has_hosted(self) -> bool:
        return any(p.bot.startswith("hosted:") for p in self.participants)

    def with_secret(self, secret: str) -> TournamentSpec:
        """This spec with its deal secret attached (it must use one)."""
        if not self.secret_seed:
            raise ValueError(f"tournament {self.name!r} has a public seed")
        if not cm.is_hex64(secret):
            raise ValueError("a deal secret is 64 lowercase hex digits")
        return dataclasses.replace(self, deal_secret=secret)

    def _secret(self) -> str:
        if self.deal_secret is None:
            raise RuntimeError(
                f"tournament {self.name!r} deals from a secret kept in its results store; "
                "it is not loaded"
            )
        return self.deal_secret

    @property
    def commitment(self) -> str | None:
        """The commitment to the deal secret; None for a public seed."""
        if self.seed is not None:
            return None
        return cm.tournament_commitment(self.name, self._secret())

    def derive(self, key: str) -> str:
        """64 hex digits for one purpose (``set/3``: that set's match seed).

        Public seed ``S``: SHA-256 of ``S/key``.  Secret: HMAC-SHA256 under the secret, so
        revealing one match's seed says nothing about the others'.
        """
        if self.seed is not None:
            return hashlib.sha256(f"{self.seed}/{key}".encode()).hexdigest()
        return cm.derive(self._secret(), key)

    def match_id(self, index: int) -> str:
        """Match ``index``'s id: stable on resume, and nothing a seat can test guesses of
        the seed against (the name and index, or the secret under a key of its own)."""
        if self.seed is not None:
            return hashlib.sha256(f"{self.name}/{index}".encode()).hexdigest()[:32]
        return self.derive(f"match-id/{index}")[:32]

    def match_commitment(self, match_id: str, seed: str, key: str) -> JSON | None:
        """What a match carries about the secret its seed comes from (None: public)."""
        if self.seed is not None:
            return None
        commitment = self.commitment
        assert commitment is not None
        return cm.for_tournament_match(
            match_id, seed, tournament=self.name, commitment=commitment, key=key
        )

    def participant(self, name: str) -> Participant:
        for p in self.participants:
            if p.name == name:
                return p
        raise KeyError(name)

    def with_overrides(
        self,
        *,
        executor: str | None = None,
        workers: int | None = None,
        db: str | None = None,
        broker: str | None = None,
    ) -> TournamentSpec:
        """Apply command-line overrides, validated like the file's own fields."""
        problems: list[str] = []
        ex = self.executor
        if executor is not None:
            if executor not in EXECUTORS:
                problems.append(f"--executor: must be one of {', '.join(EXECUTORS)}")
            else:
                ex = dataclasses.replace(ex, type=executor)
        if workers is not None:
            if workers < 1:
                problems.append("--workers: must be a positive integer")
            else:
                ex = dataclasses.replace(ex, workers=workers)
        if broker is not None:
            ex = dataclasses.replace(ex, broker=broker)
        if executor is not None:
            problems += shared_file_problems(self.participants, ex.type)
        if problems:
            raise SpecError(problems, self.source)
        return dataclasses.replace(self, executor=ex, db=db if db is not None else self.db)

    def to_json(self) -> JSON:
        """The spec in a canonical form, stored with the results so a report can show it."""
        data: JSON = {
            "name": self.name,
            "seed": self.seed,
            "rules": {"preset": self.preset, "options": dict(self.rule_options)},
            "participants": [{"name": p.name, "bot": p.bot} for p in self.participants],
            "format": {
                k: v
                for k, v in dataclasses.asdict(self.format).items()
                if k in _FORMAT_FIELDS[self.format.type]
            },
            "time_control": self.time_control.to_json(),
            "executor": {
                k: v for k, v in dataclasses.asdict(self.executor).items() if v is not None
            },
            "db": self.db,
        }
        for key in ("games", "sets", "max_deals", "public_seed"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        if self.luck_adjusted:
            data["luck_adjusted"] = True
        return data


# ---------------------------------------------------------------------------------------
# Loading


def load_spec(path: str | Path, *, check_imports: bool = True) -> TournamentSpec:
    """Read and validate a spec file; the format follows the extension (.yaml/.yml/.toml/.json)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([f"cannot read spec file: {exc.strerror or exc}"], str(p)) from exc
    return parse_spec(text, fmt=_format_of(p), source=str(p), check_imports=check_imports)


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".toml":
        return "toml"
    if suffix == ".json":
        return "json"
    raise SpecError(
        [f"unknown spec file type '{suffix or path.name}': use .yaml, .yml, .toml or .json"],
        str(path),
    )


def parse_spec(
    text: str,
    *,
    fmt: str = "yaml",
    source: str | None = None,
    check_imports: bool = True,
) -> TournamentSpec:
    """Parse spec text (``fmt`` yaml, toml or json) and validate it."""
    try:
        if fmt == "yaml":
            data = yaml.safe_load(text)
        elif fmt == "toml":
            data = tomllib.loads(text)
        elif fmt == "json":
            data = json.loads(text)
        else:
            raise SpecError([f"unknown spec format '{fmt}'"], source)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise SpecError([f"not valid {fmt.upper()}: {exc}"], source) from exc
    return validate_spec(data, source=source, check_imports=check_imports)


def validate_spec(
    data: Any, *, source: str | None = None, check_imports: bool = True
) -> TournamentSpec:
    """Turn parsed data into a :class:`TournamentSpec`, or raise :class:`SpecError`."""
    return _Validator(source, check_imports).run(data)


# ---------------------------------------------------------------------------------------
# Validation


def _suggest(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def builtin_bots() -> tuple[str, ...]:
    """Names of the built-in bots, from the bots registry when it can be imported."""
    try:
        from arena.bots import BUILTIN_BOTS as registry
    except ImportError:
        return BUILTIN_BOTS
    return tuple(sorted(registry))


def is_file_ref(ref: str) -> bool:
    """Whether a bot reference names a Python file (``path/to/bot.py:Class``)."""
    module_name, sep, _ = ref.rpartition(":")
    return bool(sep) and not ref.startswith("remote:") and (
        module_name.endswith(".py") or "/" in module_name
    )


def shared_file_problems(participants: Sequence[Participant], executor: str) -> list[str]:
    """Bots the Celery executor cannot run: a file exists on the machine that names it,
    and the workers (on other machines, each with its own files) would not find it."""
    if executor != "celery":
        return []
    return [
        f"participants[{i}].bot: '{p.bot}' is a file of this machine, which Celery workers "
        "on other machines cannot read: install it on every worker as a module "
        "(module.path:ClassName on their Python path), or connect it as a remote bot "
        "(thousand-bot run, then remote:NAME)"
        for i, p in enumerate(participants) if is_file_ref(p.bot)
    ]


def check_bot_ref(ref: Any, *, check_imports: bool = True) -> str | None:
    """Return why ``ref`` is not a usable bot reference, or None when it is."""
    if not isinstance(ref, str) or not ref:
        return ("must be a bot reference: random, greedy, module:Class, cmd:COMMAND, "
                "remote:NAME or hosted:NAME")
    builtins = builtin_bots()
    if ref in builtins:
        return None
    if ref.startswith("cmd:"):
        from arena.match.command import parse_command, program_problem

        try:
            argv = parse_command(ref)
        except ValueError as exc:
            return str(exc)
        problem = program_problem(argv) if check_imports else None
        return f"bot '{ref}': {problem}" if problem else None
    if ref.startswith("remote:"):
        name = ref[len("remote:") :]
        if not _NAME_RE.match(name):
            return (
                f"bad remote bot name '{name}': use letters, digits, '-', '_' or '.', "
                "at most 64 characters"
            )
        return None
    if ref.startswith("hosted:"):
        name, at, digest = ref[len("hosted:") :].partition("@")
        if not _NAME_RE.match(name):
            return (
                f"bad hosted bot name '{name}': use letters, digits, '-', '_' or '.', "
                "at most 64 characters"
            )
        if at and not _HASH_RE.match(digest):
            return (
                f"bad version '{digest}' of hosted bot '{name}': write hosted:{name}@HASH "
                "with the hash (or its first 8 or more hex digits) from arena bot versions"
            )
        return None
    if ":" in ref:
        module_name, _, class_name = ref.rpartition(":")
        is_file = module_name.endswith(".py") or "/" in module_name
        if not is_file and not _MODULE_REF_RE.match(ref):
            return (
                f"bad bot reference '{ref}': a Python bot is written module.path:ClassName "
                "or path/to/file.py:ClassName"
            )
        if check_imports:
            if is_file:
                if not Path(module_name).is_file():
                    return f"no file '{module_name}' for bot '{ref}'"
                return None  # loading a file runs it: left to the referee at match time
            try:
                module = importlib.import_module(module_name)
            except Exception as exc:
                return f"cannot import '{module_name}' for bot '{ref}': {exc}"
            if not hasattr(module, class_name):
                return f"module '{module_name}' has no '{class_name}' (bot '{ref}')"
        return None
    return (
        f"unknown bot '{ref}'{_suggest(ref, builtins)}: use {', '.join(builtins)}, "
        "module:Class, cmd:COMMAND, remote:NAME or hosted:NAME[@HASH]"
    )


def rules_from_config(preset: str, options: Mapping[str, Any]) -> JSON:
    """Build the engine's rules JSON; raises ValueError with the engine's reason."""
    from arena.engine import Rules

    rules = Rules.preset(preset, **dict(options))
    data: JSON = rules.to_json()
    return data


def seats_of(rules: JSON) -> int:
    """Number of seats at the table for a rules configuration."""
    from arena.engine import Rules

    return int(Rules.from_json(rules).players)


class _Validator:
    def __init__(self, source: str | None, check_imports: bool) -> None:
        self.source = source
        self.check_imports = check_imports
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def err(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def warn(self, where: str, message: str) -> None:
        self.warnings.append(f"{where}: {message}")

    def unknown(self, where: str, data: Mapping[str, Any], allowed: Sequence[str]) -> None:
        for key in data:
            if key not in allowed:
                prefix = f"{where}." if where else ""
                self.err(f"{prefix}{key}", f"unknown field{_suggest(str(key), allowed)}")

    def positive_int(self, where: str, value: Any, *, allow_zero: bool = False) -> int | None:
        low = 0 if allow_zero else 1
        if not _is_int(value) or value < low:
            kind = "a non-negative integer" if allow_zero else "a positive integer"
            self.err(where, f"must be {kind}")
            return None
        return int(value)

    def run(self, data: Any) -> TournamentSpec:
        if not isinstance(data, Mapping):
            raise SpecError(
                ["the spec must be a mapping of fields (name, rules, ...)"], self.source
            )
        # A field set to null means the same as a field left out (YAML "games:" is null).
        data = {k: v for k, v in data.items() if v is not None}
        self.unknown("", data, _TOP_FIELDS)

        name = data.get("name")
        if name is None:
            self.err("name", "is required")
        elif not isinstance(name, str) or not _NAME_RE.match(name):
            self.err(
                "name",
                _NAME_RULE,
            )
            name = None

        seed_raw = data.get("seed", name)
        seed: str | None = None
        seed_ok = True
        if _is_int(seed_raw) or (isinstance(seed_raw, str) and seed_raw):
            seed = str(seed_raw)
        elif "seed" in data:
            self.err("seed", "must be a non-empty string or an integer")
            seed_ok = False
        public_seed = data.get("public_seed")
        if public_seed is not None and not isinstance(public_seed, bool):
            self.err("public_seed", "must be true or false")
            public_seed = None

        preset, options, rules, seats = self.rules(data.get("rules"))
        participants = self.participants(data.get("participants"))
        fmt = self.format(data.get("format", "round-robin"))
        # A hosted bot is a program the organiser does not control either.
        remote = any(p.bot.startswith(("remote:", "hosted:")) for p in participants)
        secret = public_seed is False or (remote and public_seed is not True)
        if secret and "seed" in data:
            if public_seed is False:
                self.err("seed", "a fixed seed contradicts public_seed: false; remove one")
            else:
                self.err(
                    "seed",
                    "remote participants could derive every deal from a fixed seed: remove "
                    "it (the deals then come from a secret drawn for this tournament, "
                    "committed when it starts and revealed when it ends), or add "
                    "public_seed: true to play this seed anyway",
                )
        elif secret:
            seed = None

        games = sets = max_deals = None
        if "games" in data:
            games = self.positive_int("games", data["games"])
        if "sets" in data:
            sets = self.positive_int("sets", data["sets"])
        if "max_deals" in data and data["max_deals"] is not None:
            max_deals = self.positive_int("max_deals", data["max_deals"])
        luck_adjusted = data.get("luck_adjusted")
        if luck_adjusted is not None and not isinstance(luck_adjusted, bool):
            self.err("luck_adjusted", "must be true or false")
            luck_adjusted = None
        time_control = self.time_control(data.get("time_control"))
        executor = self.executor(data.get("executor"))
        db = data.get("db", DEFAULT_DB)
        if not isinstance(db, str) or not db.strip():
            self.err(
                "db",
                "must be a database URL (sqlite:///file.sqlite3, postgresql://...) or a file path",
            )
            db = DEFAULT_DB

        if fmt is not None:
            sets = self.format_rules(fmt, participants, seats, data, games, sets)

        self.problems += shared_file_problems(participants, executor.type)
        if self.problems or name is None or not seed_ok or rules is None or fmt is None:
            raise SpecError(self.problems or ["invalid spec"], self.source, self.warnings)
        assert preset is not None and options is not None and seats is not None
        return TournamentSpec(
            name=name,
            seed=seed,
            rules=rules,
            preset=preset,
            rule_options=options,
            seats=seats,
            participants=tuple(participants),
            format=fmt,
            games=games,
            sets=sets,
            max_deals=max_deals,
            time_control=time_control,
            executor=executor,
            db=db,
            source=self.source,
            public_seed=public_seed,
            luck_adjusted=bool(luck_adjusted),
            warnings=tuple(self.warnings),
        )

    def rules(self, raw: Any) -> tuple[str | None, JSON | None, JSON | None, int | None]:
        if raw is None:
            self.err("rules", "is required (e.g. rules: {preset: classic})")
            return None, None, None, None
        if isinstance(raw, str):
            raw = {"preset": raw}
        if not isinstance(raw, Mapping):
            self.err("rules", "must be a preset name or a mapping with preset and options")
            return None, None, None, None
        self.unknown("rules", raw, ("preset", "options"))
        preset = raw.get("preset")
        if not isinstance(preset, str) or not preset:
            self.err("rules.preset", "is required and must be a preset name (e.g. classic)")
            return None, None, None, None
        options = raw.get("options") or {}
        if not isinstance(options, Mapping):
            self.err("rules.options", "must be a mapping of option names to values")
            return None, None, None, None
        try:
            rules = rules_from_config(preset, options)
            seats = seats_of(rules)
        except ImportError as exc:
            self.err("rules", f"the rules engine is not available: {exc}")
            return None, None, None, None
        except (ValueError, TypeError, KeyError) as exc:
            known = _preset_known(preset)
            if not known:
                self.err("rules.preset", _reason(exc))
                return None, None, None, None
            # The engine stops at the first bad option: try each on its own, so that every
            # one is reported at once (a bad value is not hidden behind a misspelt name).
            alone = []
            for key, value in options.items():
                try:
                    rules_from_config(preset, {key: value})
                except (ValueError, TypeError, KeyError) as one:
                    alone.append(_reason(one))
            for reason in alone or [_reason(exc)]:
                self.err("rules.options", reason)
            # The preset still fixes the seats, so the checks that need them still run.
            return None, None, None, seats_of(rules_from_config(preset, {}))
        return preset, dict(options), rules, seats

    def participants(self, raw: Any) -> list[Participant]:
        if raw is None:
            self.err("participants", "is required: a list of {name, bot}")
            return []
        if not isinstance(raw, list) or not raw:
            self.err("participants", "must be a non-empty list of {name, bot}")
            return []
        out: list[Participant] = []
        seen: set[str] = set()
        for i, item in enumerate(raw):
            where = f"participants[{i}]"
            if isinstance(item, str):
                name_of = item.removeprefix("remote:").removeprefix("hosted:")
                item = {"name": name_of.split("@", 1)[0], "bot": item}
            if not isinstance(item, Mapping):
                self.err(where, "must be a mapping {name, bot} or a bot reference")
                continue
            self.unknown(where, item, ("name", "bot"))
            pname = item.get("name")
            bot = item.get("bot")
            ok = True
            if pname is None:
                self.err(f"{where}.name", "is required")
                ok = False
            elif not isinstance(pname, str) or not _NAME_RE.match(pname):
                self.err(
                    f"{where}.name",
                    _NAME_RULE,
                )
                ok = False
            elif pname in seen:
                self.err(f"{where}.name", f"duplicate name '{pname}'")
                ok = False
            if bot is None:
                self.err(f"{where}.bot", "is required")
                ok = False
            else:
                why = check_bot_ref(bot, check_imports=self.check_imports)
                if why:
                    self.err(f"{where}.bot", why)
                    ok = False
            if ok:
                assert isinstance(pname, str) and isinstance(bot, str)
                seen.add(pname)
                out.append(Participant(pname, bot))
        return out

    def format(self, raw: Any) -> FormatSpec | None:
        if isinstance(raw, str):
            raw = {"type": raw}
        if not isinstance(raw, Mapping):
            self.err(
                "format", f"must be a format name ({', '.join(FORMATS)}) or a mapping with type"
            )
            return None
        ftype = raw.get("type")
        all_fields = sorted({f for fs in _FORMAT_FIELDS.values() for f in fs})
        known_type = ftype in FORMATS
        if not known_type:
            got = f"'{ftype}'" if ftype is not None else "nothing"
            self.err(
                "format.type",
                f"unknown format {got}{_suggest(str(ftype), FORMATS)}: use {', '.join(FORMATS)}",
            )
        # Under a misspelt type the options are still checked, against every format's
        # fields: fixing the type must not bring out the next mistake.
        allowed = _FORMAT_FIELDS[str(ftype)] if known_type else tuple(all_fields)
        for key in raw:
            if key not in allowed:
                if any(key in fields for fields in _FORMAT_FIELDS.values()):
                    self.err(f"format.{key}", f"not used by format {ftype}")
                else:
                    self.err(f"format.{key}", f"unknown field{_suggest(str(key), all_fields)}")
        kwargs: dict[str, Any] = {"type": ftype}
        if "seatings" in raw:
            if raw["seatings"] not in SEATINGS:
                self.err("format.seatings", f"must be one of {', '.join(SEATINGS)}")
            else:
                kwargs["seatings"] = raw["seatings"]
        for key in ("candidate", "baseline"):
            if key in raw and key in allowed:
                if not isinstance(raw[key], str):
                    self.err(f"format.{key}", "must be a participant name")
                else:
                    kwargs[key] = raw[key]
        if "rounds" in raw and "rounds" in allowed and raw["rounds"] is not None:
            kwargs["rounds"] = self.positive_int("format.rounds", raw["rounds"])
        for key in ("elo0", "elo1"):
            if key in raw and key in allowed:
                if not _is_number(raw[key]):
                    self.err(f"format.{key}", "must be a number (Elo points)")
                else:
                    kwargs[key] = float(raw[key])
        for key in ("alpha", "beta"):
            if key in raw and key in allowed:
                if not _is_number(raw[key]) or not 0 < raw[key] < 0.5:
                    self.err(f"format.{key}", "must be a probability between 0 and 0.5")
                else:
                    kwargs[key] = float(raw[key])
        if "poll_s" in raw and "poll_s" in allowed:
            if not _is_number(raw["poll_s"]) or raw["poll_s"] <= 0:
                self.err("format.poll_s", "must be a positive number of seconds")
            else:
                kwargs["poll_s"] = float(raw["poll_s"])
        return FormatSpec(**kwargs) if known_type else None

    def format_rules(
        self,
        fmt: FormatSpec,
        participants: list[Participant],
        seats: int | None,
        data: Mapping[str, Any],
        games: int | None,
        sets: int | None,
    ) -> int | None:
        """Cross-field checks; returns the number of sets with the format's default applied."""
        t = fmt.type
        names = [p.name for p in participants]
        if t == "round-robin":
            if "games" not in data:
                self.err("games", "is required for format round-robin (the number of games)")
            if "sets" in data:
                self.err("sets", "not used by format round-robin; use games")
        else:
            if "games" in data:
                self.err("games", f"not used by format {t}; use sets (duplicate sets)")
            if t in ("duplicate", "gauntlet", "sprt") and "sets" not in data:
                what = (
                    "the maximum number of duplicate sets"
                    if t == "sprt"
                    else "the number of duplicate sets"
                )
                self.err("sets", f"is required for format {t} ({what})")
            if t in ("swiss", "league") and "sets" not in data:
                sets = 1
        if t == "swiss" and fmt.rounds is None and "rounds" not in (data.get("format") or {}):
            self.err("format.rounds", "is required for format swiss")
        if seats is None:
            return sets
        if t in ("gauntlet", "sprt"):
            for key in ("candidate", "baseline") if t == "sprt" else ("candidate",):
                value = getattr(fmt, key)
                if value is None:
                    self.err(f"format.{key}", f"is required for format {t}")
                elif value not in names:
                    self.err(
                        f"format.{key}",
                        f"'{value}' is not a participant{_suggest(value, names)}",
                    )
            if t == "sprt" and fmt.candidate is not None and fmt.candidate == fmt.baseline:
                self.err("format.baseline", "must differ from format.candidate")
            if t == "sprt" and fmt.elo0 >= fmt.elo1:
                self.err("format.elo1", "must be greater than format.elo0")
        raw_participants = data.get("participants")
        if not participants or (
            isinstance(raw_participants, list) and len(raw_participants) != len(participants)
        ):
            return sets  # some entries are wrong already; counting them would only confuse
        n = len(participants)
        if t == "sprt":
            if n != seats:
                self.err(
                    "participants",
                    f"format sprt needs exactly {seats} participants for {seats} seats "
                    "(candidate, baseline and fixed opponents for the other seats)",
                )
        elif t == "gauntlet":
            if n - 1 < seats - 1:
                self.err(
                    "participants",
                    f"format gauntlet needs at least {seats - 1} opponents besides the candidate",
                )
        elif t != "league" and n < seats:
            self.err("participants", f"{n} participants cannot fill a {seats}-seat table")
        elif t == "league" and n < seats:
            self.warn(
                "participants",
                f"{n} for {seats} seats: the league plays nothing until at least {seats} "
                f"are listed (it reads the file again every {fmt.poll_s:g} s)",
            )
        return sets

    def time_control(self, raw: Any) -> TimeControl:
        if raw is None:
            return TimeControl()
        if not isinstance(raw, Mapping):
            self.err("time_control", "must be a mapping with decision_ms, bank_ms, strike_limit")
            return TimeControl()
        self.unknown("time_control", raw, ("decision_ms", "bank_ms", "strike_limit"))
        base = TimeControl()
        decision = self.positive_int(
            "time_control.decision_ms", raw.get("decision_ms", base.decision_ms)
        )
        bank = self.positive_int(
            "time_control.bank_ms", raw.get("bank_ms", base.bank_ms), allow_zero=True
        )
        strikes = self.positive_int(
            "time_control.strike_limit", raw.get("strike_limit", base.strike_limit)
        )
        return TimeControl(
            decision_ms=decision or base.decision_ms,
            bank_ms=bank if bank is not None else base.bank_ms,
            strike_limit=strikes or base.strike_limit,
        )

    def executor(self, raw: Any) -> ExecutorSpec:
        if raw is None:
            return ExecutorSpec()
        if isinstance(raw, str):
            raw = {"type": raw}
        if not isinstance(raw, Mapping):
            self.err("executor", f"must be one of {', '.join(EXECUTORS)} or a mapping with type")
            return ExecutorSpec()
        self.unknown("executor", raw, ("type", "workers", "broker", "queue", "routing"))
        kwargs: dict[str, Any] = {}
        etype = raw.get("type", "local")
        if etype not in EXECUTORS:
            self.err(
                "executor.type",
                f"unknown executor '{etype}'{_suggest(str(etype), EXECUTORS)}: "
                f"use {', '.join(EXECUTORS)}",
            )
        else:
            kwargs["type"] = etype
        if "workers" in raw and raw["workers"] is not None:
            kwargs["workers"] = self.positive_int("executor.workers", raw["workers"])
        for key in ("broker", "routing"):
            if key in raw and raw[key] is not None:
                value = raw[key]
                if not isinstance(value, str) or "://" not in value:
                    self.err(f"executor.{key}", "must be a URL such as redis://127.0.0.1:6379/0")
                else:
                    kwargs[key] = value
        if "queue" in raw:
            if not isinstance(raw["queue"], str) or not _NAME_RE.match(raw["queue"]):
                self.err("executor.queue", "must be a queue name (letters, digits, '-', '_', '.')")
            else:
                kwargs["queue"] = raw["queue"]
        if etype in _EXECUTOR_IGNORES:
            for key, why in _EXECUTOR_IGNORES[etype].items():
                if raw.get(key) is not None:
                    self.warn(f"executor.{key}", f"not used by executor {etype}: {why}")
        return ExecutorSpec(**kwargs)


#: Executor settings that change nothing for a type, and what does the job there instead.
_EXECUTOR_IGNORES: dict[str, dict[str, str]] = {
    "inline": {
        "workers": "it plays one match at a time in the scheduler's process",
        "broker": "only the celery executor sends matches through a broker",
        "queue": "only the celery executor sends matches to a queue",
    },
    "local": {
        "broker": "only the celery executor sends matches through a broker",
        "queue": "only the celery executor sends matches to a queue",
    },
    "celery": {
        "workers": "Celery workers are the arena worker processes (arena worker "
        "--concurrency N)",
        "routing": "workers reach remote bots through their own routing (arena worker "
        "--routing URL, default the broker)",
    },
}


def _reason(exc: BaseException) -> str:
    """An exception's message as written (a KeyError's repr quotes are dropped, and only
    those: a message ending in a quoted value keeps its closing quote)."""
    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    return str(exc)


def _preset_known(preset: str) -> bool:
    try:
        from arena.engine import PRESETS
    except ImportError:
        return False
    return preset in PRESETS
