/**
 * The table `Main` loads commands by (Commands) and the whole tree (Cli) are the same commands: each entry loads
 * the command of its name, and the tree has no command the table lacks. `flotta --help` and `--version` come from
 * the table alone.
 */
import { Command } from "@effect/cli"
import { assert, describe, it } from "@effect/vitest"
import { HashMap, HashSet } from "effect"
import { flotta } from "../src/Cli.js"
import { answerFromData, COMMANDS, GROUPS, rootHelp } from "../src/Commands.js"
import { version } from "../src/Version.js"

const namesOf = (
  command: unknown
) => [...HashSet.values(Command.getNames(command as Command.Command<string, never, never, unknown>))]

describe("the command table", () => {
  it("names exactly the tree's commands", () => {
    const tree = [...HashMap.keys(Command.getSubcommands(flotta))].sort()
    assert.deepStrictEqual([...COMMANDS.keys()].sort(), tree)
    assert.strictEqual(GROUPS.flatMap((group) => group.entries).length, COMMANDS.size, "no command is listed twice")
  })

  it("loads, for each name, the module that declares a command of that name", async () => {
    for (const [name, entry] of COMMANDS) {
      const loaded = await entry.load()
      const commands = Array.isArray(loaded) ? loaded : [loaded]
      assert.isTrue(commands.some((command) => namesOf(command).includes(name)), `${name} is not in what it loads`)
    }
  })

  it("says the version and lists every command with its summary in the root's help", () => {
    const help = rootHelp(version)
    assert.match(version, /^\d+\.\d+\.\d+/)
    assert.isTrue(help.startsWith(`flotta ${version}: `))
    for (const [name, entry] of COMMANDS) assert.include(help, `  ${name.padEnd(12)}${entry.summary}\n`)
    assert.include(help, "FLOTTA_MCP_PORT")
  })

  it("answers `flotta`, `--help`, `-h` and `--version` from data alone, and nothing else", () => {
    const argv = (...args: Array<string>) => ["node", "flotta", ...args]
    for (const args of [[], ["--help"], ["-h"]]) {
      assert.strictEqual(answerFromData(argv(...args), version), rootHelp(version))
    }
    assert.strictEqual(answerFromData(argv("--version"), version), version)
    for (const args of [["list"], ["list", "--help"], ["--version", "--help"], ["--log-level", "debug"]]) {
      assert.isUndefined(answerFromData(argv(...args), version), args.join(" "))
    }
  })
})
