"""Data of the hostile tests: the broken and odd files of tests/test_hostile_kb.py's knowledge base, the secret
in files outside it, and the secret on the host that tests/test_hostile_sql_box.py's statements try to read."""

from __future__ import annotations

OUTSIDE_SECRET = "OUTSIDE-SECRET-91c2"  # in files outside the base, reached by links
ALIAS_BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
              + "".join(f"{n}: &{n} [{','.join(['*' + p] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi",
                                                                                   strict=True)))
VALID = {  # file -> its text: all of these are indexed
    "valid.md": "---\ntitle: Valid page\ncategories: [ops]\n---\n# Valid\nRotate the keys monthly.\n",
    "categories-list.md": "---\ntitle: Cat list\ncategories: [Billing, ' api ']\n---\nInvoices here.\n",
    "categories-number.md": "---\ntitle: Cat number\ncategories: 42\n---\nNumbered category.\n",
    "categories-null.md": "---\ntitle: Cat null\ncategories: null\n---\nNo category.\n",
    "categories-mapping.md": "---\ntitle: Cat mapping\ncategories: {a: 1}\n---\nMapping category.\n",
    "title-list.md": "---\ntitle: [Listed, title]\n---\nA title given as a list.\n",
    "empty.md": "",
    "only-front-matter.md": "---\ntitle: Only front matter\ndescription: Nothing below the fence.\n---\n",
    "deep-headings.md": "# Top\n" + "".join(f"{'#' * (1 + n % 6)} H{n}\nText {n}.\n" for n in range(1, 600))
                        + "####### seven hashes is text\n",
    "with space.md": "# Spaced name\nA file name with spaces.\n",
    "ünïcødé.md": "# Unicode name\nAccented file name.\n",
    "-leading-dash.md": "# Dash\nA name starting with a dash.\n",
    "hash#and?mark.md": "# Marks\nA name with # and ?.\n",
    "new\nline.md": "# Newline\nA name with a newline.\n",
    "dir.md/inside.md": "# Inside\nA file inside a folder named like Markdown.\n",
}
BYTES = {  # valid files whose bytes matter
    "bom.md": "\ufeff---\ntitle: With BOM\n---\nByte order mark first.\n".encode(),
    "crlf.md": b"---\r\ntitle: With CRLF\r\n---\r\n# Windows\r\nCarriage returns.\r\n",
}
BROKEN = {  # file -> a word its reason must hold
    "invalid-yaml.md": ("---\ntitle: [unclosed\n---\nBody.\n", "invalid YAML"),
    "unterminated.md": ("---\ntitle: Never closed\nBody.\n", "never closed"),
    "front-matter-list.md": ("---\n- a\n- b\n---\nBody.\n", "mapping"),
    "front-matter-scalar.md": ("---\njust a string\n---\nBody.\n", "mapping"),
    "invalid-toml.md": ("+++\ntitle = \n+++\nBody.\n", "TOML"),
    "alias-bomb.md": (f"---\n{ALIAS_BOMB}---\nBody.\n", "aliases"),
    "huge-front-matter.md": ("---\n" + "k: v\n" * 20_000 + "---\nBody.\n", "limit"),
}
BROKEN_BYTES = {
    "latin1.md": ("# Cafe\nline two\ncaf\xe9 au lait\n".encode("latin-1"), "not UTF-8"),
    "binary.md": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)), "binary"),
}

HOST_SECRET = "HOST-SECRET-7f3a"  # in a file beside the SQL box's trace file
