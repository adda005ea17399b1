"""Reading what a user or a run dir hands us, within limits: size, file type, nesting, aliases.

Every YAML and JSON input (flows, ``flows.yaml``, scenarios, ``runtime.yaml``, handoff
blocks, run files) is read through here, so a hostile file is refused with a message
instead of crashing the process:

* a file is read only when it is a regular file (never a FIFO or a device, which could
  block or never end) and at most ``limit`` bytes are read;
* YAML is composed from the C parser's events without recursion, refusing nesting deeper
  than :data:`MAX_DEPTH` before anything recurses (libyaml's own composer overflows the C
  stack on a 25 000-level file), and refusing a document whose aliases would expand to
  more than :data:`MAX_NODES` nodes (a "billion laughs" is a few hundred bytes);
* JSON is read strictly: nesting deeper than :data:`MAX_DEPTH` is refused before it is
  decoded, and so are a key twice in one object, ``NaN``, infinities and integers too long
  to read; YAML read as values (not flows, whose reader reports every repeated key) refuses
  a repeated key too.

Errors are ``ValueError``s (``UnicodeDecodeError`` is one too) or ``yaml.YAMLError``s
whose message says what was refused; callers add the file name and their own error type.
"""

from __future__ import annotations

from swarm_runtime.inputs.files import (
    decode_utf8,
    read_bytes_limited,
    read_prefix,
    read_run_text,
    read_text_limited,
)
from swarm_runtime.inputs.json_input import check_json_depth, load_json
from swarm_runtime.inputs.limits import (
    MAX_DEPTH,
    MAX_INPUT_BYTES,
    MAX_NODES,
    MAX_RUN_FILE_BYTES,
    InputRefused,
    too_deep,
)
from swarm_runtime.inputs.yaml_input import (
    compose_yaml,
    describe_yaml_error,
    is_limit_refusal,
    load_yaml,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_INPUT_BYTES",
    "MAX_NODES",
    "MAX_RUN_FILE_BYTES",
    "InputRefused",
    "check_json_depth",
    "compose_yaml",
    "decode_utf8",
    "describe_yaml_error",
    "is_limit_refusal",
    "load_json",
    "load_yaml",
    "read_bytes_limited",
    "read_prefix",
    "read_run_text",
    "read_text_limited",
    "too_deep",
]
