/**
 * Bad command-line input, as a user meets it: every bad value fails before anything runs, with exit code 2
 * and one line that names the flag (or argument) and the value given.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runFlottaAll } from "./support/cli.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-usage-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

const NAME_RULE = "1 to 63 characters: a-z, 0-9, '.', '_' or '-', starting with a letter or digit"

/** Each case: the arguments, and the whole of stderr it must print (after `flotta: `). */
const expectUsageErrors = async (cases: ReadonlyArray<readonly [ReadonlyArray<string>, string | RegExp]>) => {
  const results = await runFlottaAll(dir, cases.map(([args]) => args))
  cases.forEach(([args, expected], i) => {
    const ran = results[i]!
    const line = `flotta ${args.join(" ")}`
    if (typeof expected === "string") assert.strictEqual(ran.stderr, `flotta: ${expected}\n`, line)
    else assert.match(ran.stderr, expected, line)
    assert.strictEqual(ran.code, 2, `${line}: ${ran.stderr}`)
    assert.strictEqual(ran.stdout, "", line)
  })
}

describe("bad command-line input", () => {
  it("flotta run: each bad value names its flag and the value", { timeout: 300_000 }, async () => {
    const missing = path.join(dir, "no-such-dir")
    await expectUsageErrors([
      [
        ["run", "--simulate", "--permission", "bogus", "x"],
        "--permission: \"bogus\" is not one of read_only, full, ask"
      ],
      [["run", "--simulate", "--max-turns", "abc", "x"], "--max-turns: \"abc\" is not a whole number above 0"],
      [["run", "--simulate", "--max-turns", "-3", "x"], "--max-turns: \"-3\" is not a whole number above 0"],
      [["run", "--simulate", "--max-turns", "1.5", "x"], "--max-turns: \"1.5\" is not a whole number above 0"],
      [["run", "--simulate", "--max-budget-usd", "-1", "x"], "--max-budget-usd: \"-1\" is not a number above 0"],
      [["run", "--simulate", "--max-budget-usd", "lots", "x"], "--max-budget-usd: \"lots\" is not a number above 0"],
      [
        ["run", "--simulate", "--timeout", "0", "x"],
        "--timeout: \"0\" is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
      ],
      [
        ["run", "--simulate", "--json-schema", "{", "x"],
        /^flotta: --json-schema: "\{" is not valid JSON \(.+\)\n$/
      ],
      [
        ["run", "--simulate", "--json-schema", "[1]", "x"],
        "--json-schema: \"[1]\" is not a JSON Schema: a schema is a JSON object, e.g. {\"type\":\"object\"}"
      ],
      [
        ["run", "--simulate", "--json-schema", "schema.json", "x"],
        `--json-schema: "schema.json" is not inline JSON, and there is no file ${path.join(dir, "schema.json")}`
      ],
      [["run", "--simulate", "--cwd", missing, "x"], `--cwd: ${JSON.stringify(missing)} is not a directory`],
      [["run", "--simulate", "--config", "nope.json", "x"], "--config: \"nope.json\" is not a file"],
      [["run", "--simulate", "--name", "Bad Name", "x"], `--name: "Bad Name" is not a valid name (${NAME_RULE})`],
      [["run", "--simulate", "--model", "", "x"], "--model: \"\" is empty"],
      [["run", "--simulate", "--allow", ",", "x"], "--allow: \",\" names no tool"],
      [
        ["run", "--simulate", "--permission", "full", "--allow", "Read", "x"],
        "--allow: give either --permission or --allow, not both"
      ],
      [["run", "--simulate"], "Missing argument <prompt>"],
      [["run", "--simulate", ""], "<prompt>: \"\" is empty"],
      // An unknown option (or one missing its value) is not a prompt: it would start a paid run.
      [
        ["run", "--simulate", "--bogus"],
        "<prompt>: \"--bogus\" is an option, not text: no such option here, or it lacks its value (see --help)"
      ],
      [
        ["run", "--simulate", "--permision", "full", "x"],
        "The flag '--permision' is not recognized. Did you mean '--permission'?"
      ]
    ])
  })

  it("the client commands and an unknown command do the same", { timeout: 300_000 }, async () => {
    await expectUsageErrors([
      [["status"], "Missing argument <name>"],
      [["status", "Bad"], `<name>: "Bad" is not a valid name (${NAME_RULE})`],
      [
        ["ask", "scout", "--jsn"],
        "<text>: \"--jsn\" is an option, not text: no such option here, or it lacks its value (see --help)"
      ],
      [["result", "scout", "12"], "<turn>: \"12\" is not a turn id (t1, t2, ...) or latest"],
      [["reports", "--since", "-1"], "--since: \"-1\" is not a whole number (0 or more)"],
      [["reports", "--agent", "Bad"], `--agent: "Bad" is not a valid name (${NAME_RULE})`],
      [["transcript"], "Missing argument <name>"],
      [["transcript", "scout", "--last", "0"], "--last: \"0\" is not a whole number above 0"],
      [["reports", "--store", "memory"], "--store: \"memory\" lives only inside its fleet: ask the serve instead"],
      [
        ["transcript", "scout", "--store", "https://db/x"],
        "--store: \"https://db/x\" is not the path of an SQLite file or a postgres:// URL"
      ],
      [
        ["list", "--url", "localhost:4099"],
        "--url: \"localhost:4099\" is not an http(s) URL such as http://127.0.0.1:4099/mcp"
      ],
      [
        ["schedule", "keep-going", "abc"],
        "<minutes>: \"abc\" is not a whole number of minutes from 1 to 1440"
      ],
      [["schedule", "work-on", "next friday"], "<date>: \"next friday\" is not a date YYYY-MM-DD"],
      [
        ["schedule", "work-today", "9am", "5pm"],
        "<from>: \"9am\" is not a local time of day HH:MM, such as 09:00 or 17:30"
      ],
      [["findings", "--limit", "0"], "--limit: \"0\" is not a whole number above 0"],
      [
        ["lsit"],
        "<command>: \"lsit\" is not one of approvals, approve, ask, broadcast, clear, close, compact, completion, costs, " +
        "deny, diff, doctor, findings, fork, gc, hibernate, info, init, interrupt, list, mcp, notify, prompt, repl, reports, result, run, " +
        "runs, schedule, serve, spawn, status, transcript, unpark, verify, wait, wake, worktrees"
      ]
    ])
  })

  it("the agent, run, worktree and completion commands do the same", { timeout: 300_000 }, async () => {
    const missing = path.join(dir, "no-such-dir")
    await expectUsageErrors([
      [["spawn"], "Missing argument <name>"],
      [["spawn", "Bad Name"], `<name>: "Bad Name" is not a valid name (${NAME_RULE})`],
      [
        ["spawn", "scout", "--timeout", "abc"],
        "--timeout: \"abc\" is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
      ],
      [["spawn", "scout", "--permission", "root"], "--permission: \"root\" is not one of read_only, full, ask"],
      [["spawn", "scout", "--role", "boss"], "--role: \"boss\" is not one of member, manager"],
      [
        ["spawn", "scout", "--env", "NOEQUALS"],
        "--env: \"NOEQUALS\" is not KEY=VALUE (a variable name, then =, then its value)"
      ],
      [["spawn", "scout", "--cwd", missing], `--cwd: ${JSON.stringify(missing)} is not a directory`],
      [["spawn", "scout", "--model", ""], "--model: \"\" is empty"],
      [["spawn", "scout", "--allow", ",", "--json"], "--allow: \",\" names no tool"],
      [
        ["spawn", "scout", "--permission", "full", "--allow", "Read"],
        "--allow: give either --permission or --allow, not both"
      ],
      [["info"], "Missing argument <name>"],
      [["interrupt", "Bad"], `<name>: "Bad" is not a valid name (${NAME_RULE})`],
      [["wait", "scout", "7"], "<turn>: \"7\" is not a turn id (t1, t2, ...)"],
      [
        ["wait", "scout", "--timeout", "0"],
        "--timeout: \"0\" is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
      ],
      [["fork", "scout"], "Missing argument <name>"],
      [["compact"], "Missing argument <name>"],
      [
        ["spawn", "scout", "--auto-compact-at", "150"],
        "--auto-compact-at: \"150\" is not a percentage above 0 and at most 100"
      ],
      [["fork", "scout", "twin", "--at", "2"], "--at: \"2\" is not a turn id (t1, t2, ...)"],
      [["fork", "scout", "Twin"], `<name>: "Twin" is not a valid name (${NAME_RULE})`],
      [["broadcast"], "Missing argument <text>"],
      [
        ["broadcast", "hi", "--timeout", "-5"],
        "--timeout: \"-5\" is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
      ],
      [["runs", "--state", "done"], "--state: \"done\" is not one of running, succeeded, failed"],
      [["runs", "--limit", "0"], "--limit: \"0\" is not a whole number above 0"],
      [["runs", "errand", "--state", "failed"], "--state: narrows the list of runs: give it without a <name>"],
      [["worktrees", "--cwd", missing], `--cwd: ${JSON.stringify(missing)} is not a directory`],
      [["gc", "--cwd", missing, "--force"], `--cwd: ${JSON.stringify(missing)} is not a directory`],
      [["verify", "main"], "Missing argument <check>"],
      [
        ["verify", "main", "true", "--timeout", "soon"],
        "--timeout: \"soon\" is not a duration above 0 such as 90, 90s, 500ms, 5m or 1h"
      ],
      [["completion", "powershell"], "<shell>: \"powershell\" is not one of bash, zsh, fish"],
      [["notify", "test", "--target", "0"], "--target: \"0\" is not a whole number above 0"]
    ])
  })

  it("several bad values are each reported", { timeout: 60_000 }, async () => {
    const [ran] = await runFlottaAll(dir, [["run", "--simulate", "--permission", "bogus", "--max-turns", "abc", "x"]])
    assert.strictEqual(ran!.code, 2)
    assert.strictEqual(
      ran!.stderr,
      "flotta: --permission: \"bogus\" is not one of read_only, full, ask\n" +
        "flotta: --max-turns: \"abc\" is not a whole number above 0\n"
    )
  })
})
