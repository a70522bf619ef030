#!/usr/bin/env node
// What the test suite needs from the machine beside node_modules, checked before `npm test` runs (its `pretest`):
// Debian's Chromium for the dashboard's browser tests (Playwright's own browser download does not work offline),
// bubblewrap and socat for the claude CLI's sandbox, and the Postgres server binaries for the Postgres store.
// As root with apt-get (CI, a fresh machine), what is missing is installed; otherwise the script stops at once and
// prints the one command that installs it.
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

const onPath = (tool) =>
  (process.env.PATH ?? "").split(path.delimiter).some((dir) => {
    try {
      fs.accessSync(path.join(dir, tool), fs.constants.X_OK)
      return true
    } catch {
      return false
    }
  })

const chromium = process.env.FLOTTA_CHROMIUM ?? "/usr/bin/chromium"
const postgres = ["/usr/lib/postgresql/15/bin/initdb", "/usr/lib/postgresql/15/bin/pg_ctl"]

// Each need: whether this machine has it, and the Debian package that brings it.
const needs = [
  { what: `Chromium (${chromium})`, has: () => fs.existsSync(chromium), pkg: "chromium" },
  { what: "bubblewrap (bwrap)", has: () => onPath("bwrap"), pkg: "bubblewrap" },
  { what: "socat", has: () => onPath("socat"), pkg: "socat" },
  {
    what: "the Postgres server (initdb, pg_ctl)",
    has: () => postgres.every((file) => fs.existsSync(file)) || (onPath("initdb") && onPath("pg_ctl")),
    pkg: "postgresql"
  }
]

const missing = needs.filter((need) => !need.has())
if (missing.length === 0) process.exit(0)

const packages = missing.map((need) => need.pkg)
const isRoot = typeof process.getuid === "function" && process.getuid() === 0
if (isRoot && onPath("apt-get")) {
  console.error(`test setup: installing ${packages.join(", ")} (${missing.map((need) => need.what).join(", ")})`)
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" }
  const run = (args) => spawnSync("apt-get", args, { stdio: ["ignore", "ignore", "inherit"], env }).status === 0
  if (run(["update", "-qq"]) && run(["install", "-y", "-qq", ...packages])) {
    const still = missing.filter((need) => !need.has())
    if (still.length === 0) process.exit(0)
    console.error(`test setup: still missing after the install: ${still.map((need) => need.what).join(", ")}`)
    process.exit(1)
  }
  console.error(`test setup: apt-get could not install ${packages.join(", ")}`)
  process.exit(1)
}

console.error(
  `The tests need ${missing.map((need) => need.what).join(", ")}, which this machine lacks. Install ` +
    `${missing.length === 1 ? "it" : "them"} with:\n\n  sudo apt-get install -y ${packages.join(" ")}\n\n` +
    "(or, for the browser alone, name a Chromium or Chrome executable in FLOTTA_CHROMIUM), then run `npm test` again."
)
process.exit(1)
