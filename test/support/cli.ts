/** Runs the compiled `flotta` command as a user would. */
import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"

export const ROOT = path.resolve(import.meta.dirname, "..", "..")
export const FLOTTA = path.join(ROOT, "packages", "flotta", "bin", "flotta.js")

export interface Ran {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs a program to its end in `cwd` with stdin closed, collecting what it prints; SIGKILL after `timeout` ms. */
export const runProgram = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd: string; readonly env?: Record<string, string | undefined>; readonly timeout?: number }
) =>
  new Promise<Ran>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeout ?? 120_000)
    child.on("error", reject)
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })

/** Runs `flotta ...args` in `cwd` with stdin closed and stdout/stderr captured (neither is a terminal). */
export const runFlotta = (cwd: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) =>
  runProgram(process.execPath, [FLOTTA, ...args], { cwd, env })

/** Runs each `flotta ...args` in `cwd`, a few at a time (each is a Node start-up), results in order. */
export const runFlottaAll = async (
  cwd: string,
  argvs: ReadonlyArray<ReadonlyArray<string>>,
  env: Record<string, string> = {},
  concurrency = 3
): Promise<Array<Ran>> => {
  const results: Array<Ran> = new Array(argvs.length)
  let next = 0
  const worker = async () => {
    while (next < argvs.length) {
      const i = next++
      results[i] = await runFlotta(cwd, argvs[i]!, env)
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, argvs.length) }, worker))
  return results
}

/** A long-running `flotta ...args` (serve, repl) with its output collected as it comes. */
export const startFlotta = (args: ReadonlyArray<string>, cwd: string, stdin: "pipe" | "ignore" = "pipe") => {
  const child = spawn(process.execPath, [FLOTTA, ...args], { cwd, stdio: [stdin, "pipe", "pipe"] })
  const out = { stdout: "", stderr: "", exit: null as number | null, exited: false }
  child.stdout!.on("data", (d) => (out.stdout += d))
  child.stderr!.on("data", (d) => (out.stderr += d))
  child.on("exit", (code) => {
    out.exit = code
    out.exited = true
  })
  return { child, out }
}

/** Kills a started command if it is still running, and waits (at most 10 s) until it has exited. */
export const stopFlotta = async (child: ChildProcess, out: { readonly exited: boolean }) => {
  if (!out.exited) child.kill("SIGKILL")
  const end = Date.now() + 10_000
  while (!out.exited) {
    if (Date.now() > end) throw new Error("timed out waiting for the command to exit")
    await new Promise((r) => setTimeout(r, 50))
  }
}
