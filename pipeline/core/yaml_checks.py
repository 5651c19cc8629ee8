"""What a config's YAML is refused for before anything is built from it: aliases that expand past
`MAX_EXPANDED_NODES` (a "billion laughs"), a key written twice in one mapping (PyYAML keeps the last silently),
and a value that contains itself through an alias (validation would recurse forever).

The first two are checked on PyYAML's composed node graph, the last on the built data; each walk visits a node
once however many aliases reach it. PyYAML is imported by the functions that need it (`config_source`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

__all__ = ["MAX_EXPANDED_NODES", "cycle", "duplicate_key", "expanded_size", "huge_int"]

# Generous: a real config has hundreds of nodes; a nine-level "billion laughs" has 10**9 from a few lines.
MAX_EXPANDED_NODES = 1_000_000


def expanded_size(root: yaml.Node | None) -> int:
    """How many YAML nodes the document has once every alias is expanded (a tree walk, keys included).

    Counted on the composed node graph, before any Python object is built:
    an alias is a second edge to the same node, so sizes are memoised by node
    identity and the count costs one visit per distinct node, however big the
    expansion. A node inside its own alias (`&a {y: *a}`) counts once here;
    `load_config` refuses it as recursive afterwards.
    """
    import yaml

    if root is None:
        return 0
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # iterative post-order: a deeply nested document must not hit the recursion limit
        node, children_done = stack.pop()
        if not children_done and id(node) in size:  # met again through an alias: already counted
            continue
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            size[id(node)] = 1
            continue
        if children_done:
            size[id(node)] = 1 + sum(size.get(id(c), 1) for c in children)  # .get: a node on its own path (a cycle)
            continue
        size[id(node)] = 1  # provisional, so a cycle back to this node ends the walk
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in size)
    return size[id(root)]


def duplicate_key(root: yaml.Node | None) -> tuple[tuple[str, ...], int, int] | None:
    """The first key written twice in one mapping, as (key path, its second line, its first line), or None.

    PyYAML's constructor keeps the last of two equal keys and drops the first
    silently (a second `metrics:` would discard the first's metrics), so the
    composed node graph is checked before anything is built. Keys compare by
    tag and text (`1` and `"1"` differ); merge keys (`<<: *base`) are not
    duplicates, overriding a merged key is what they are for. Each node is
    visited once, however many aliases reach it.
    """
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:  # iterative: a deeply nested document must not hit the recursion limit
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[tuple[str, str], int] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    line = key.start_mark.line + 1
                    if (key.tag, key.value) in first:
                        return (*path, str(key.value)), line, first[key.tag, key.value]
                    first[key.tag, key.value] = line
            stack.extend(reversed([(value, (*path, str(key.value))) for key, value in node.value]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, (*path, str(i))) for i, item in enumerate(node.value)]))
    return None


def huge_int(root: yaml.Node | None, limit: int) -> tuple[tuple[str, ...], int, int] | None:
    """The first decimal whole number of more than `limit` digits, as (key path, its line, its digits), or None.

    Python refuses to read such a number from text (`sys.get_int_max_str_digits()`, 4,300 by default: the cost of the
    conversion grows with the square of its length), and PyYAML's constructor lets that `ValueError` out with no
    place; the composed graph still knows the key. Hexadecimal, octal and binary numbers have no such limit.
    """
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, tuple[str, ...]]] = [(root, ())]
    while stack:  # iterative, as `duplicate_key`
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(reversed([(n, (*path, str(key.value))) for key, value in node.value for n in (key, value)]))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(item, (*path, str(i))) for i, item in enumerate(node.value)]))
        elif isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:int":
            digits = node.value.lstrip("+-").replace("_", "")
            if digits.isdigit() and len(digits) > limit and not (digits.startswith("0") and len(digits) > 1):
                return path, node.start_mark.line + 1, len(digits)
    return None


def cycle(node: Any, path: tuple[str, ...], inside: frozenset[int] = frozenset()) -> tuple[str, ...] | None:
    """The key path of the first value that contains itself (`&a {y: *a}`), or None: validation would recurse forever."""
    if not isinstance(node, (dict, list)):
        return None
    if id(node) in inside:
        return path
    inside = inside | {id(node)}
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if (found := cycle(value, (*path, str(key)), inside)) is not None:
            return found
    return None
