#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""embed-text.py INPUT OUTPUT SYMBOL: a C file defining `const char SYMBOL[]` (INPUT's bytes,
NUL-terminated) and `const size_t SYMBOL_len`, for text libpaddock carries (code-server.py)."""
import sys

src, out, sym = sys.argv[1:4]
data = open(src, "rb").read()
if b"\0" in data:
    sys.exit("embed-text.py: %s holds a NUL byte" % src)
with open(out, "w") as f:
    f.write("/* generated from %s by embed-text.py: do not edit */\n#include <stddef.h>\n\n" % src.rsplit("/", 1)[-1])
    f.write("extern const char %s[];\nextern const size_t %s_len;\n" % (sym, sym))
    f.write("const char %s[] = {\n" % sym)
    for i in range(0, len(data), 16):
        f.write("\t" + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    f.write("\t0x00\n};\nconst size_t %s_len = %d;\n" % (sym, len(data)))
