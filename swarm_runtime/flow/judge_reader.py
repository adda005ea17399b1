"""Reading the ``judges:`` of a step (docs/judges.md#judges).

A step's ``judges:`` is a non-empty list of ``{name, rubric, threshold, engine?,
min_pass_rate?}``: after each execution of the step, a model grades its reply against the
rubric with a score in [0, 1], and the judgement passes at ``threshold`` or above. Each
error names the file, the line, the step and the field; whether ``engine`` is a registered
engine is checked when the run builds its engines (plugins may register it).
"""

from __future__ import annotations

import yaml

from swarm_runtime.flow.spec import JudgeSpec
from swarm_runtime.flow.yaml_reader import NodeReader, line_of
from swarm_runtime.ids import STEP_ID_RE

JUDGE_KEYS = ("name", "rubric", "threshold", "engine", "min_pass_rate")
MAX_RUBRIC_CHARS = 20_000
_NUMBER_TAGS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")


class JudgeReader(NodeReader):
    """Reads ``judges:`` lists."""

    def judges(
        self, node: yaml.Node, step: str, agents: tuple[str, ...] | None = None
    ) -> tuple[JudgeSpec, ...] | None:
        """``judges:``: a non-empty list of judges with distinct names.

        A judge's call is made as agent ``judge-<name>``: a step's agent of that name would
        share its cassettes and transcripts, and is refused.
        """
        if not isinstance(node, yaml.SequenceNode) or not node.value:
            self.error(
                "must be a non-empty list of judges, each {name, rubric, threshold}",
                node,
                step=step,
                field="judges",
            )
            return None
        found: list[JudgeSpec] = []
        for position, entry in enumerate(node.value, start=1):
            judge = self._judge(entry, step, f"judges.#{position}")
            if judge is not None and any(other.name == judge.name for other in found):
                self.error(
                    f"judge name '{judge.name}' is given twice; each judge of a step needs "
                    "its own name",
                    entry,
                    step=step,
                    field=f"judges.{judge.name}",
                )
                judge = None
            if judge is not None and f"judge-{judge.name}" in (agents or ()):
                self.error(
                    f"judge '{judge.name}' and agent 'judge-{judge.name}' would share their "
                    "cassettes and transcripts; rename one of them",
                    entry,
                    step=step,
                    field=f"judges.{judge.name}",
                )
                judge = None
            if judge is not None:
                found.append(judge)
        return tuple(found)

    def _judge(self, node: yaml.Node, step: str, label: str) -> JudgeSpec | None:
        fields = self.mapping(node, JUDGE_KEYS, what="a judge", step=step, field=label)
        if fields is None:
            return None
        missing = [key for key in ("name", "rubric", "threshold") if key not in fields]
        if missing:
            self.error(
                f"a judge needs {', '.join(missing)} (it has: {', '.join(fields) or 'nothing'})",
                node,
                step=step,
                field=label,
            )
            return None
        name = self.identifier(
            fields["name"], STEP_ID_RE, step=step, field=f"{label}.name", what="judge name"
        )
        label = f"judges.{name}" if name else label
        rubric = self.string(fields["rubric"], step=step, field=f"{label}.rubric")
        if rubric is not None and len(rubric) > MAX_RUBRIC_CHARS:
            self.error(
                f"a rubric may be {MAX_RUBRIC_CHARS} characters at most, got {len(rubric)}",
                fields["rubric"],
                step=step,
                field=f"{label}.rubric",
            )
            rubric = None
        threshold = self._share(fields["threshold"], step, f"{label}.threshold")
        rate = None
        if "min_pass_rate" in fields:
            rate = self._share(fields["min_pass_rate"], step, f"{label}.min_pass_rate")
            if rate is None:
                return None
        engine = None
        if "engine" in fields:
            engine = self.string(fields["engine"], step=step, field=f"{label}.engine")
            if engine is None:
                return None
        if name is None or rubric is None or threshold is None:
            return None
        return JudgeSpec(
            name=name,
            rubric=rubric,
            threshold=threshold,
            engine=engine,
            min_pass_rate=rate,
            line=line_of(node),
        )

    def _share(self, node: yaml.Node, step: str, field: str) -> float | None:
        """A number from 0 to 1."""
        if not isinstance(node, yaml.ScalarNode) or node.tag not in _NUMBER_TAGS:
            self.error("must be a number from 0 to 1", node, step=step, field=field)
            return None
        value = self.number(node, step=step, field=field)
        if value is not None and value > 1:
            self.error(f"must be from 0 to 1, got {value}", node, step=step, field=field)
            return None
        return None if value is None else float(value)
