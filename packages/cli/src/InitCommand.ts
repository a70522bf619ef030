/** `flotta init`: writes a commented starter config (JSON with comments) into the current directory. */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as path from "node:path"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"

export const STARTER =
  `// flotta's config. JSON with comments; see the README's "Configuration" section for every field.
{
  // Merged under every agent entry (an entry's own fields win).
  "fleetDefaults": { "model": "sonnet", "permission": "read_only", "cwd": "." },

  "agents": [
    // A standing, read-only session: \`flotta serve\` and \`flotta repl\` start it.
    { "name": "scout", "appendSystemPrompt": "Answer questions about this repository. Do not change files." },

    // A run template: never started at boot; fire it with run({ template: "issue-runner", prompt }).
    // Write authority lives only in runs, each in its own git worktree.
    {
      "name": "issue-runner",
      "lifecycle": "run",
      "worktree": true,
      "permission": { "allow": ["Read", "Glob", "Grep", "Edit", "Write", "Bash"] },
      "maxTurns": 40,
      "maxBudgetUsd": 2
    }
  ],

  // The fleet over MCP at http://127.0.0.1:4099/mcp (loopback only; set "token" before any other host).
  "mcp": { "port": 4099 }

  // Working hours and recurring routines switch the scheduler on. Uncomment to try:
  // ,"schedule": { "timezone": "utc", "hours": { "mon": [["09:00", "17:00"]], "tue": [["09:00", "17:00"]] } },
  // "routines": [{ "name": "morning-scan", "action": "scan", "every": { "dailyAt": "09:30" }, "maxBudgetUsd": 0.5 }]
}
`

export const command = Command.make(
  "init",
  {
    force: Options.boolean("force").pipe(Options.withDescription("Overwrite an existing flotta.config.json"))
  },
  ({ force }) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const file = path.join(process.cwd(), "flotta.config.json")
      if ((yield* fs.exists(file)) && !force) {
        return yield* invalid("init", `${file} already exists (use --force to overwrite it)`)
      }
      yield* fs.writeFileString(file, STARTER)
      yield* Output.stderr(`flotta: wrote ${file}`)
    })
).pipe(Command.withDescription("Write a commented starter config (flotta.config.json) here"))
