#!/usr/bin/env node
// The `flotta` command: the compiled entry point (built by `npm install` through `prepare`).
import "../dist/Main.js"
