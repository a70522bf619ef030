/**
 * The `flotta` command run inside the test's own process, for checks of what it prints: `Main`'s answers from data,
 * else the program `Launch` runs, with stdout and stderr captured (as through a pipe: neither is a terminal) and the
 * exit code the binary would end with. No Node start-up per look; whether each command starts as a real binary is
 * checked with the binary itself (test/cli-help.test.ts).
 */
import { answerFromData } from "@flotta/cli/Commands"
import * as Launch from "@flotta/cli/Launch"
import { version } from "@flotta/cli/Version"
import { Effect } from "effect"
import type { Ran } from "./cli.js"

type Write = typeof process.stdout.write

let running = false

/** Sets `isTTY` on a stream for the run, and gives back how to put it back. */
const notATerminal = (stream: NodeJS.WriteStream | NodeJS.ReadStream) => {
  const own = Object.getOwnPropertyDescriptor(stream, "isTTY")
  Object.defineProperty(stream, "isTTY", { value: false, configurable: true, writable: true })
  return () => {
    if (own === undefined) Reflect.deleteProperty(stream, "isTTY")
    else Object.defineProperty(stream, "isTTY", own)
  }
}

/**
 * Runs `flotta ...args` in `cwd` with `env` over this process's environment, one run at a time (stdout, stderr,
 * the working directory and the environment are the process's own), and gives what it printed and its exit code.
 */
export const runInProcess = async (
  cwd: string,
  args: ReadonlyArray<string>,
  env: Record<string, string | undefined> = {}
): Promise<Ran> => {
  if (running) throw new Error("runInProcess: one run at a time (stdout and stderr are the process's own)")
  running = true
  const argv = [process.execPath, "flotta", ...args]
  let stdout = ""
  let stderr = ""
  const capture = (append: (text: string) => void): Write =>
    ((chunk: string | Uint8Array, ...rest: Array<unknown>) => {
      append(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8"))
      const done = rest.find((arg) => typeof arg === "function") as (() => void) | undefined
      done?.()
      return true
    }) as Write
  const writes = { out: process.stdout.write, err: process.stderr.write }
  const restores = [notATerminal(process.stdout), notATerminal(process.stderr), notATerminal(process.stdin)]
  const before = process.cwd()
  const saved = Object.keys(env).map((name) => [name, process.env[name]] as const)
  process.stdout.write = capture((text) => (stdout += text))
  process.stderr.write = capture((text) => (stderr += text))
  try {
    process.chdir(cwd)
    for (const [name, value] of Object.entries(env)) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    const answer = answerFromData(argv, version)
    if (answer !== undefined) {
      stdout += answer + "\n"
      return { code: 0, stdout, stderr }
    }
    const exit = await Effect.runPromiseExit(Launch.main(argv))
    return { code: Launch.exitCodeOf(exit), stdout, stderr }
  } finally {
    process.stdout.write = writes.out
    process.stderr.write = writes.err
    for (const restore of restores) restore()
    process.chdir(before)
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
    running = false
  }
}

/** Runs each `flotta ...args` in `cwd` in process, one after another, results in order. */
export const runAllInProcess = async (
  cwd: string,
  argvs: ReadonlyArray<ReadonlyArray<string>>,
  env: Record<string, string> = {}
): Promise<Array<Ran>> => {
  const results: Array<Ran> = []
  for (const args of argvs) results.push(await runInProcess(cwd, args, env))
  return results
}
