#!/usr/bin/env python3
"""Writes the ```swift blocks of README.md and the DocC articles as Swift files to type-check.

Used by Scripts/check-docs. One file per document: each block becomes a function of its own (its type
declarations, extensions, functions and imports at file scope, where the document's later blocks see
them), preceded by `#sourceLocation` so that the
compiler's errors name the Markdown file and line. A document's blocks see `import Flow` and the
module the article belongs to (the README's: Flow, FlowTimers, FlowNet and FlowSystem).

Markers, in an HTML comment on a line of their own right before the fence (blank lines allowed):
  <!-- partial -->                      not checked: a fragment on purpose (a manifest excerpt, "...")
  <!-- given: connection: TCPConnection, loop: EventLoop -->
                                        the block's free names, as the function's parameters
  <!-- declared: struct User { let name: String } -->
                                        Swift placed at file scope before the block (types and functions
                                        it assumes); the comment may span lines
  <!-- alone -->                        checked in a file of its own, with only its own imports (for a
                                        block whose imports would clash with the document's others)
  <!-- local -->                        the block's functions stay in its function, next to the
                                        constants they use (else they go to file scope)
"""
import os
import re
import sys

DECLARATION = re.compile(
    r"^(@\w+(\([^)]*\))?\s+)*((public|private|fileprivate|internal|package|final|open|nonisolated)\s+)*"
    r"(extension|struct|class|enum|protocol|actor|typealias|func)\b|^@main\b"
)
FUNCTION = re.compile(r"^((private|fileprivate|internal|public|package)\s+)?func\b")
ATTRIBUTES_ONLY = re.compile(r"^(@\w+(\([^)]*\))?\s*)+$")
MARKER = re.compile(r"^\s*<!--\s*(partial|given|declared|local|alone)\b\s*(?::\s*(.*?))?\s*-->\s*$", re.DOTALL)


def blocks(path):
    """(first line number of the code, lines, markers) of each ```swift block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            markers = []
            back = index - 1
            while back >= 0:
                if lines[back].strip() == "":
                    back -= 1
                    continue
                if not lines[back].rstrip().endswith("-->"):
                    break
                # A comment, maybe over several lines: find where it opens.
                top = back
                while top >= 0 and "<!--" not in lines[top]:
                    top -= 1
                match = MARKER.match(" ".join(lines[top:back + 1]) if top == back else
                                     lines[top] + "\n" + "\n".join(lines[top + 1:back + 1]))
                if not match:
                    break
                markers.append((match.group(1), match.group(2) or ""))
                back = top - 1
            end = index + 1
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            yield index + 2, lines[index + 1:end], markers
            index = end
        index += 1


def split_items(code):
    """The block's lines as top-level items: (is a file-scope declaration, [(offset, line)]). An item
    starts at a line in column 0 outside braces; attribute lines join the item that follows them."""
    items = []
    depth = 0
    current = None
    attributes = []
    for offset, line in enumerate(code):
        stripped = line.strip()
        starts_item = depth == 0 and stripped and not line[0].isspace() and not stripped.startswith("//")
        if starts_item and ATTRIBUTES_ONLY.match(stripped):
            attributes.append((offset, line))
            continue
        if starts_item or current is None:
            is_declaration = bool(DECLARATION.match(stripped)) or stripped.startswith("import ") or any(
                a[1].strip().startswith("@main") for a in attributes)
            current = [is_declaration, attributes]
            attributes = []
            items.append(current)
        current[1].append((offset, line))
        depth += line.count("{") - line.count("}")
    if attributes:
        items.append([False, attributes])
    return items


def module_of(path):
    parts = path.split(os.sep)
    if len(parts) >= 3 and parts[0] == "Sources" and parts[2].endswith(".docc"):
        return parts[1]
    return None


def default_header(path):
    module = module_of(path)
    if module is None:
        # The README shows the libraries side by side.
        return ["import Flow", "import FlowTimers", "import FlowNet", "import FlowSystem"]
    if module == "Deferred":
        # Deferred code imports Deferred alone: Flow's `Future` would make `Future` ambiguous.
        return ["import Deferred"]
    return ["import Flow"] + ([f"import {module}"] if module != "Flow" else [])


def render_block(path, number, first_line, code, kinds, header, out):
    file_scope = []
    body = []
    for is_declaration, item in split_items(code):
        if "local" in kinds and FUNCTION.match(item[0][1].strip()):
            is_declaration = False
        (file_scope if is_declaration else body).append(item)
    for declared in kinds.get("declared", []):
        out.append(f"#sourceLocation(file: \"{path}\", line: {first_line - 1})")
        for statement in declared.split("\n"):
            if statement.strip().startswith("import "):
                header.append(statement.strip())
            else:
                out.append(statement)
    for item in file_scope:
        out.append(f"#sourceLocation(file: \"{path}\", line: {first_line + item[0][0]})")
        for offset, line in item:
            if line.strip().startswith("import "):
                header.append(line.strip())
                line = ""
            out.append(line)
    parameters = ", ".join(kinds.get("given", []))
    if file_scope or kinds.get("declared"):
        out.append("#sourceLocation()")
    out.append(f"func docBlock{number}({parameters}) async throws {{")
    for item in body:
        out.append(f"#sourceLocation(file: \"{path}\", line: {first_line + item[0][0]})")
        for offset, line in item:
            out.append(line)
    if body:
        out.append("#sourceLocation()")
    out.append("}")


def render(path):
    """The files for `path`: (name suffix, imports, lines); and how many blocks were checked, skipped."""
    shared = ("", [] if module_of(path) == "Deferred" else default_header(path), [])
    files = [shared]
    checked = skipped = 0
    for number, (first_line, code, markers) in enumerate(blocks(path)):
        kinds = dict()
        for kind, value in markers:
            kinds.setdefault(kind, []).append(value)
        if "partial" in kinds:
            skipped += 1
            continue
        checked += 1
        if "alone" in kinds:
            target = (f"_{number}", default_header(path), [])
            files.append(target)
        else:
            target = shared
        render_block(path, number, first_line, code, kinds, target[1], target[2])
    if module_of(path) == "Deferred" and not shared[1]:
        shared[1].extend(default_header(path))
    return [f for f in files if f[2]], checked, skipped


def main():
    destination = sys.argv[1]
    documents = sys.argv[2:]
    os.makedirs(destination, exist_ok=True)
    total_checked = total_skipped = 0
    for path in documents:
        files, checked, skipped = render(path)
        total_checked += checked
        total_skipped += skipped
        for suffix, header, out in files:
            name = re.sub(r"[^A-Za-z0-9]+", "_", path) + suffix + ".swift"
            seen = []
            for line in header:
                if line not in seen:
                    seen.append(line)
            with open(os.path.join(destination, name), "w", encoding="utf-8") as file:
                file.write("\n".join(seen + [""] + out) + "\n")
    print(f"{total_checked} blocks to check, {total_skipped} marked partial")


if __name__ == "__main__":
    main()
