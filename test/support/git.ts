/** Git for tests: commits under a fixed identity, so they never depend on the machine's git config. */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"

/** Runs `git ...args` in `cwd`; returns its trimmed stdout (throws on a non-zero exit). */
export const git = (cwd: string, ...args: Array<string>) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd, encoding: "utf8" }).trim()

/** Makes `dir` a repository on branch main whose one commit holds what is in it (a README when it is empty). */
export const newRepo = (dir: string) => {
  fs.mkdirSync(dir, { recursive: true })
  if (fs.readdirSync(dir).length === 0) fs.writeFileSync(path.join(dir, "README"), "hello\n")
  git(dir, "init", "-q", "-b", "main")
  git(dir, "add", ".")
  git(dir, "commit", "-qm", "first")
  return dir
}
