#!/usr/bin/env node
// The `flotta` command: @flotta/cli's compiled entry point (built by the install through `prepare`).
import "@flotta/cli/Main"
