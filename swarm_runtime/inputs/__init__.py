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
