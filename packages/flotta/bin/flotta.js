#!/usr/bin/env node
// The `flotta` command: the bundled command line (dist/cli, made from @flotta/cli by build.mjs). On Node 22.1 and
// later, V8 keeps the code it compiled for it in a cache between runs (the system's temporary directory), so a
// command starts faster from the second run on.
import module from "node:module"

module.enableCompileCache?.()
await import("../dist/cli/Main.js")
