"""Golden runs compared through syrupy (docs/goldens.md).

A golden is a run in the docs/contract/run-dir.md layout under ``<golden dir>/<scenario>/``,
normalised by :mod:`swarm_runtime.golden`. Each artefact is one snapshot file, stored under its own
path, so ``--snapshot-update`` rewrites only the files that changed and deletes the ones
no run produces any more; a drifted or missing golden fails with a per-file, per-step
diff. syrupy is imported here, and this module only by the ``swarm_golden`` fixture.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from pytest_swarm.golden_names import REPLAY_SUFFIX, golden_scenario

if TYPE_CHECKING:
    from syrupy.assertion import SnapshotAssertion
    from syrupy.location import PyTestLocation
    from syrupy.types import SerializableData, SerializedData, SnapshotIndex


class GoldenRunExtension(SingleFileSnapshotExtension):
    """One golden artefact per snapshot file, stored at ``<root>/<scenario>/<artefact>``."""

    _write_mode = WriteMode.TEXT
    file_extension = ""  # artefacts keep their own .json / .jsonl
    golden_root: ClassVar[Path] = Path("golden")
    scenario: ClassVar[str] = ""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """The scenario's directory."""
        return str(cls.golden_root / cls.scenario)

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        """Only the scenario's own directory is scanned for its goldens."""
        return cls.dirname(test_location=test_location)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        """The artefact's path inside the run, e.g. ``signal/receipts/x-y.json``."""
        return str(index)

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        """The artefact's path (with its own extension)."""
        return str(index)

    def _inside(self, location: str) -> bool:
        base = Path(self.golden_root / self.scenario).resolve()
        return base in Path(location).resolve().parents

    def is_snapshot_location(self, *, location: str) -> bool:
        """Every file under the scenario's directory is one of its goldens."""
        return self._inside(location)

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        """Claim the files of this scenario only."""
        return self._inside(filepath)

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        """A scenario's goldens belong to the test that asserts that scenario."""
        base = Path(cls.golden_root / cls.scenario).resolve()
        return base in Path(snapshot_location).resolve().parents

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        """A golden file holds one snapshot, named by its path inside the run."""
        base = Path(self.golden_root / self.scenario).resolve()
        name = Path(snapshot_location).resolve().relative_to(base).as_posix()
        collection = SnapshotCollection(location=snapshot_location)
        collection.add(Snapshot(name=name))
        return collection

    def serialize(self, data: SerializableData, **_kwargs: Any) -> SerializedData:
        """Goldens are already text."""
        return str(data)

    @classmethod
    def write_snapshot(cls, **kwargs: Any) -> None:
        """Write as syrupy does, without its warning about names.

        Goldens are named by the run's layout, not by the test, on purpose.
        """
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"\s*Can not relate snapshot")
            super().write_snapshot(**kwargs)

    @classmethod
    def write_snapshot_collection(
        cls, *, snapshot_collection: SnapshotCollection, name_order: dict[str, int] | None = None
    ) -> None:
        """Create the artefact's directories, then write it."""
        Path(snapshot_collection.location).parent.mkdir(parents=True, exist_ok=True)
        super().write_snapshot_collection(
            snapshot_collection=snapshot_collection, name_order=name_order
        )


def golden_extension(golden_root: Path, scenario: str) -> type[GoldenRunExtension]:
    """An extension class bound to one scenario's golden directory."""
    return type(
        "GoldenRunExtension_" + "".join(c if c.isalnum() else "_" for c in scenario),
        (GoldenRunExtension,),
        {"golden_root": Path(golden_root), "scenario": scenario},
    )


class SwarmGolden:
    """``swarm_golden(record, scenario)`` compares a run with its golden.

    In stub mode that is ``golden/<scenario>/``; in record and replay mode
    ``golden/<scenario>.replay/`` (``--snapshot-update`` in record mode writes it); in the
    live modes (sdk, cli) the comparison is skipped: a live model's replies differ from run
    to run, so no golden can hold them.
    """

    def __init__(
        self,
        snapshot: SnapshotAssertion,
        golden_root: Path,
        hook: Any,
        mode: str = "stub",
        count: Any = None,
        update_command: str = "pytest --snapshot-update",
    ) -> None:
        self.snapshot = snapshot
        self.update_command = update_command
        """What writes (or accepts) this test's golden, verbatim."""
        self.golden_root = Path(golden_root)
        self.hook = hook
        self.mode = mode
        self.compared = 0
        self.count = count or (lambda _name: None)
        """Told ``goldens_compared``, ``goldens_updated``, ``goldens_drifted`` or
        ``goldens_missing`` per call."""

    def __call__(self, record: Any = None, scenario: Any = None) -> None:
        """Fail with a per-file, per-step diff when the run differs from its golden.

        ``record`` is what ``flow_runner`` returned and ``scenario`` the golden's name; a
        call without them fails the test saying so (a golden is a directory the user
        reviews and commits, so it is never named behind their back).
        """
        import pytest

        from pytest_swarm.run_record import RunRecord
        from swarm_runtime.golden import diff_runs, golden_files, markdown_report
        from swarm_runtime.ids import FLOW_KEY_RE

        __tracebackhide__ = True
        if not isinstance(record, RunRecord) or not isinstance(scenario, str):
            pytest.fail(_usage(record, scenario), pytrace=True)
        if not FLOW_KEY_RE.fullmatch(scenario.replace("/", "-")) or ".." in scenario:
            raise ValueError(f"golden scenario {scenario!r} must be a simple name like 'signal'")
        if self.mode in ("sdk", "cli"):
            pytest.skip(
                f"golden '{scenario}' not compared in live {self.mode} mode: a live model's "
                "replies differ from run to run; record with --swarm-mode=record to make a "
                f"golden of recorded calls ({scenario}{REPLAY_SUFFIX})"
            )
        scenario = golden_scenario(scenario, self.mode)
        self.count(f"scenario:{scenario}")
        self.hook.pytest_swarm_normalize(record=record)
        current = golden_files(record.path, volatile=record.volatile)
        _refuse_credentials(scenario, current)
        target = self.golden_root / scenario
        stored = golden_files(target) if target.is_dir() else {}
        assertion = self.snapshot.use_extension(golden_extension(self.golden_root, scenario))
        # syrupy records each comparison (and writes under --snapshot-update) in __eq__.
        mismatched = [
            name
            for name, text in current.items()
            if not assertion(name=name) == text  # noqa: SIM201
        ]
        self._tally(stored, current, mismatched)
        if not mismatched:
            return
        if not stored:
            raise AssertionError(
                f"no golden for scenario '{scenario}' in {target}; create it with\n  "
                f"{self.update_command}\nthen review and commit it"
            )
        changes = [c for c in diff_runs(stored, current) if c.path in mismatched]
        report = markdown_report(changes, old_label=f"golden/{scenario}", new_label="this run")
        raise AssertionError(
            f"golden drift in scenario '{scenario}': {len(changes)} file(s) differ from "
            f"{target}; after review, accept it with:\n  {self.update_command}\n\n{report}"
        )

    def _tally(
        self, stored: dict[str, str], current: dict[str, str], mismatched: list[str]
    ) -> None:
        """Count one comparison: compared, updated, drifted, or missing (none stored yet)."""
        self.compared += 1
        if getattr(self.snapshot, "update_snapshots", False):
            changed = set(stored) != set(current) or any(
                stored.get(name) != text for name, text in current.items()
            )
            self.count("goldens_updated" if changed else "goldens_compared")
        elif mismatched:
            self.count("goldens_drifted" if stored else "goldens_missing")
        else:
            self.count("goldens_compared")


def _refuse_credentials(scenario: str, files: dict[str, str]) -> None:
    """No golden is written or compared that holds a credential from the environment."""
    from swarm_runtime.credentials import credential_values, find_credentials

    secrets = credential_values()
    for name, text in files.items():
        found = find_credentials(text, secrets)
        if found:
            raise AssertionError(
                f"refusing to write or compare golden {scenario}/{name}: it holds the value "
                f"of a credential from the environment ({', '.join(found)})"
            )


def _usage(record: Any, scenario: Any) -> str:
    """What a call of ``swarm_golden`` without a run and a golden name is told."""
    import reprlib

    from pytest_swarm.run_record import RunRecord

    given = ", ".join(
        "record" if isinstance(value, RunRecord) else reprlib.repr(value)
        for value in (record, scenario)
        if value is not None
    )
    return (
        f"swarm_golden({given}) needs the run and the golden's name, e.g. "
        'swarm_golden(record, "claims-desk") compares the run flow_runner() returned with '
        "golden/claims-desk/ (golden/claims-desk.replay/ in record and replay mode)"
    )
