/**
 * `flotta init`: writes a commented starter config (JSON with comments) into the current directory: the
 * original flotta's dev fleet (read-only scout, librarian and reviewer sessions; the issue-runner and
 * issue-filer run templates, and a read-only triage one), the store (`.flotta/state.db`), the MCP server, and
 * commented-out blocks to try: notifications, a GitHub trigger (a triage run) and a scheduler (a read-only scan).
 * Uncommenting a block turns on nothing that writes or reaches outside the machine: the examples that do (a Slack
 * target, an issue-runner mapping, the triggered fix-ci and the find-and-file routines) stay commented inside
 * it, each valid once uncommented against the rest of the file. When the
 * project has a `.gitignore`, the store's files are added to it (a new `.gitignore` is not made: that is the
 * project's own choice); only the store's files, not all of `.flotta/`, which may hold the config
 * (`.flotta/config.json`).
 */
import { Command, Options } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import * as path from "node:path"
import * as Output from "./Output.js"
import { invalid } from "./SharedOptions.js"

export const STARTER =
  `// flotta's config. JSON with comments; every field: https://github.com/flotta-dev/flotta/blob/main/docs/reference/config.md
{
  // Merged under every agent entry (an entry's own fields win).
  "fleetDefaults": { "model": "sonnet", "permission": "read_only", "cwd": "." },

  "agents": [
    // Standing, read-only sessions: \`flotta serve\` and \`flotta repl\` start them. A session has no worktree,
    // so a write-capable one is refused: write work belongs in a run template (below).
    { "name": "scout", "appendSystemPrompt": "Answer questions about this repository. Do not change files." },
    { "name": "librarian", "model": "haiku", "appendSystemPrompt": "Index and summarize." },
    {
      "name": "reviewer",
      "appendSystemPrompt": "Review the code you are pointed at: read it and the code around it, and comment on bugs, risks and missing tests, citing file and line. Do not change files."
    },

    // Run templates: never started at boot; fire one with run({ template: "issue-runner", prompt }).
    // Write authority lives only in runs, each in its own git worktree. The two that write are sandboxed: their
    // commands write only in the worktree and reach only GitHub (what \`gh\` needs; give it its token in GH_TOKEN,
    // since the system keyring is out of the sandbox's reach). The sandbox needs bubblewrap and socat on Linux
    // (\`flotta doctor\` checks); a run never starts without it.
    {
      "name": "issue-runner",
      "lifecycle": "run",
      "worktree": true,
      "permission": { "allow": ["Read", "Glob", "Grep", "Edit", "Write", "Bash"] },
      "sandbox": { "network": { "allow": ["github.com", "api.github.com"] } },
      "appendSystemPrompt": "Work one issue in a worktree, run the checks, report.",
      "maxTurns": 40,
      "maxBudgetUsd": 2
    },
    // Files found work as GitHub issues with \`gh\` (its token's scope is its authority), only when no open
    // issue covers it yet; it never closes, edits, comments on or merges anything. The commented-out
    // find-and-file routine at the end fires it, one run per new task a scan finds.
    {
      "name": "issue-filer",
      "lifecycle": "run",
      "worktree": true,
      "permission": { "allow": ["Read", "Bash"] },
      "sandbox": { "network": { "allow": ["github.com", "api.github.com"] } },
      "appendSystemPrompt": "You file GitHub issues with the gh CLI, and do nothing else. Before filing, search the open issues (gh issue list --state open --search \\"<key words>\\") and file only work that no open issue already covers (gh issue create --title \\"...\\" --body \\"...\\"). Never close, reopen, edit, comment on, label or merge an issue or pull request, and change no files. Report each issue you opened, with its URL, and each task you skipped with the open issue that already covers it.",
      "prompt": "File this task as a GitHub issue if it is genuinely new.",
      "maxTurns": 20,
      "maxBudgetUsd": 0.5
    },
    // A read-only run (the defaults' permission, no worktree): what an issue is about, where in the code it lies
    // and how big the fix is. It changes nothing; the GitHub trigger below fires it with the issue in its prompt.
    {
      "name": "triage",
      "lifecycle": "run",
      "appendSystemPrompt": "Triage the issue you are given: read the code it concerns, then say where the problem lies, how big the fix is and what a fix must check. Do not change files.",
      "prompt": "Triage this issue.",
      "maxTurns": 20,
      "maxBudgetUsd": 0.5
    }
  ],

  // Where \`flotta serve\` and \`flotta repl\` keep the fleet's state, so that a restart brings every agent back:
  // an SQLite file (relative to this directory), "memory", or { "postgres": "postgres://..." } for a shared one.
  // "retainDays" (default 30) prunes old report entries and finished turns.
  "store": { "sqlite": ".flotta/state.db" },

  // The fleet over MCP at http://127.0.0.1:4099/mcp (loopback only; set "token" before any other host).
  "mcp": { "port": 4099 },
  // The live dashboard at http://127.0.0.1:4099/ (the MCP server's host and token; "port" gives it its own).
  "dashboard": {}

  // The blocks below are off. Uncommenting one (remove one "// " a line) turns on nothing that writes or reaches
  // outside this machine: what does stays commented inside it, for you to opt into once you trust it.

  // Notifications: the events a target names, POSTed to its "url" as JSON (the report entry) or as a Slack message,
  // signed with its "secret" (X-Flotta-Signature), at least once and in order. \`flotta notify test\` sends one.
  // Uncomment to try, with a receiver of your own on this machine at the example URL.
  // ,"notify": [
  //   { "url": "http://127.0.0.1:8787/flotta-events", "events": ["run_finished", "approval_requested"],
  //     "secret": "replace-with-a-long-random-secret" }
  //   // A Slack channel: its incoming webhook's URL (a secret of its own), in Slack's format.
  //   // ,{ "url": "https://hooks.slack.com/services/T000/B000/XXXX", "format": "slack",
  //   //   "events": ["approval_requested", "run_finished", "agent_crashed"] }
  // ]

  // GitHub's webhook (payload URL http://<this host>:4099/hooks/github, content type application/json) fires runs
  // and routines; "secret" is the webhook's (or FLOTTA_GITHUB_SECRET). GitHub must reach the MCP server's port,
  // which listens on 127.0.0.1 until the mcp section has a "host" and a "token". Uncomment to try: an issue
  // labeled "flotta" gets a read-only triage run.
  // ,"github": { "secret": "replace-with-the-webhook-secret", "on": [
  //   { "event": "issues.labeled", "label": "flotta", "run": "triage" }
  //   // Write work, once you trust it: an issue labeled "flotta-fix" gets an issue-runner run in its own worktree.
  //   // ,{ "event": "issues.labeled", "label": "flotta-fix", "run": "issue-runner" }
  // ] }

  // Working hours and recurring routines switch the scheduler on. Uncomment to try: a read-only scan each working
  // morning, whose tasks land in \`flotta findings\`; the routines that write stay commented inside.
  // ,"schedule": { "timezone": "utc", "hours": { "mon": [["09:00", "17:00"]], "tue": [["09:00", "17:00"]] } },
  // "routines": [
  //   { "name": "morning-scan", "action": "scan", "every": { "dailyAt": "09:30" }, "maxBudgetUsd": 0.5 }
  //   // Write work, fired only when triggered (it has no "every"): by POST /hooks/routines/fix-ci with the MCP
  //   // token or its own secret, or by a GitHub mapping that names it, such as one for a failed check:
  //   // event check_run.completed, conclusion failure, routine fix-ci. A trigger fires it outside working
  //   // hours too, since it has "triggerAnyTime".
  //   // ,{ "name": "fix-ci", "action": "run", "template": "issue-runner",
  //   //   "secret": "replace-with-a-long-random-secret", "triggerAnyTime": true, "maxBudgetUsd": 2 }
  //   // Find -> file: a read-only scan, then an issue-filer run per new task (at most 3 a day). It opens real
  //   // issues, so it ships disabled. Dry-run it first, a run that reports and files nothing:
  //   //   npx flotta run --worktree --allow Read,Bash "List the work here that no open issue covers yet (see gh issue list). File nothing."
  //   // ,{ "name": "find-and-file", "action": "dispatch_scan", "every": { "dailyAt": "10:00" },
  //   //   "focus": "bugs, stale docs, TODOs", "template": "issue-filer", "maxDispatch": 3, "maxBudgetUsd": 2 }
  // ]
}
`

/** The line that keeps the store's files (the database, its WAL and lock files) out of version control. */
export const GITIGNORE_LINE = ".flotta/state.db*"

/** Whether a .gitignore's text already ignores the default store (the line, or all of `.flotta`). */
export const ignoresStore = (text: string): boolean =>
  text.split(/\r?\n/).map((line) => line.trim()).some((line) =>
    [GITIGNORE_LINE, `/${GITIGNORE_LINE}`, ".flotta", ".flotta/", "/.flotta", "/.flotta/"].includes(line)
  )

/** The .gitignore text with the store's line added (after a newline, if the text lacks a final one). */
export const withStoreIgnored = (text: string): string =>
  `${text}${
    text.length === 0 || text.endsWith("\n") ? "" : "\n"
  }# flotta's state (flotta serve, flotta repl)\n${GITIGNORE_LINE}\n`

export const command = Command.make(
  "init",
  {
    force: Options.boolean("force").pipe(Options.withDescription("Overwrite an existing flotta.config.json.")),
    json: Options.boolean("json").pipe(
      Options.withDescription(
        "Print what was written as JSON (the config file, and the .gitignore line if one was added) instead of " +
          "the notes on stderr."
      )
    )
  },
  ({ force, json }) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const note = (text: string) => (json ? Effect.void : Output.stderr(`flotta: ${text}`))
      const file = path.join(process.cwd(), "flotta.config.json")
      if ((yield* fs.exists(file)) && !force) {
        return yield* invalid("init", `${file} already exists (use --force to overwrite it)`)
      }
      yield* fs.writeFileString(file, STARTER)
      yield* note(`wrote ${file}`)
      const gitignore = path.join(process.cwd(), ".gitignore")
      let ignored: { readonly file: string; readonly line: string } | null = null
      if (yield* fs.exists(gitignore)) {
        const text = yield* fs.readFileString(gitignore)
        if (!ignoresStore(text)) {
          yield* fs.writeFileString(gitignore, withStoreIgnored(text))
          ignored = { file: gitignore, line: GITIGNORE_LINE }
          yield* note(`added ${GITIGNORE_LINE} to ${gitignore} (the fleet's state lives there)`)
        }
      } else {
        yield* note(
          `the fleet's state will live in ${path.join(".flotta", "state.db")}: keep it out of version control`
        )
      }
      if (json) {
        yield* Output.stdout(JSON.stringify(
          { config: file, gitignore: ignored, store: path.join(process.cwd(), ".flotta", "state.db") },
          null,
          2
        ))
      }
    })
).pipe(
  Command.withDescription(
    "Write a commented starter config (flotta.config.json) here, and keep the store's files out of an existing " +
      ".gitignore."
  )
)
