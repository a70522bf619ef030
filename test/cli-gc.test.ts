/**
 * `flotta gc` on a real git repository, as a user runs it (the compiled binary, no serve): a clean run worktree goes;
 * one with uncommitted work stays, or with --force its work (edits and new files, not ignored ones) is committed to
 * its branch first, under the identity git has or else flotta's, and the output names the branch, commit and
 * files; a commit a hook refuses keeps the worktree and says why; a locked worktree is never touched; one on no
 * branch is kept; only --force --discard drops work, naming each file; --discard alone is a usage error.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { FLOTTA, runProgram } from "./support/cli.js"
import { git, newRepo } from "./support/git.js"

let dir: string
beforeAll(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "flotta-gc-")))
})
afterAll(() => {
  fs.rmSync(dir, { recursive: true, force: true })
})

/** A git config file of its own: `useConfigOnly` so git never guesses an identity from the machine. */
const gitConfig = (name: string, identity?: { readonly name: string; readonly email: string }) => {
  const file = path.join(dir, `${name}.gitconfig`)
  const user = identity === undefined ? "" : `\tname = ${identity.name}\n\temail = ${identity.email}\n`
  fs.writeFileSync(file, `[user]\n\tuseConfigOnly = true\n${user}`)
  return file
}

/** `flotta ...args` in `cwd` with git reading only `config` (no identity from the environment). */
const flotta = (cwd: string, config: string, ...args: Array<string>) =>
  runProgram(process.execPath, [FLOTTA, ...args], {
    cwd,
    env: {
      GIT_CONFIG_GLOBAL: config,
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: undefined,
      GIT_AUTHOR_EMAIL: undefined,
      GIT_COMMITTER_NAME: undefined,
      GIT_COMMITTER_EMAIL: undefined,
      EMAIL: undefined
    }
  })

/** A run worktree as flotta makes one (`.claude/worktrees/<name>` on `worktree-<name>`), or detached. */
const addWorktree = (repo: string, name: string, options: { readonly detached?: boolean } = {}) => {
  const at = path.join(repo, ".claude", "worktrees", name)
  if (options.detached === true) git(repo, "worktree", "add", "-q", "--detach", at)
  else git(repo, "worktree", "add", "-q", "-b", `worktree-${name}`, at)
  return at
}

const write = (at: string, file: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(at, file)), { recursive: true })
  fs.writeFileSync(path.join(at, file), text)
}

interface GcJson {
  readonly repo: string
  readonly removed: ReadonlyArray<string>
  readonly committed: ReadonlyArray<{ path: string; branch: string; commit: string; files: ReadonlyArray<string> }>
  readonly discarded: ReadonlyArray<{ path: string; branch: string; files: ReadonlyArray<string> }>
  readonly kept: ReadonlyArray<{ path: string; reason: string }>
}

describe("flotta gc", () => {
  it("commits uncommitted work to its branch before removing a worktree; only --discard drops it, by name", async () => {
    const repo = path.join(dir, "repo")
    fs.mkdirSync(repo)
    fs.writeFileSync(path.join(repo, ".gitignore"), "*.log\n")
    newRepo(repo)
    const anonymous = gitConfig("anonymous")
    const clean = addWorktree(repo, "clean")
    const typo = addWorktree(repo, "typo")
    write(typo, "README", "hello, fixed\n")
    write(typo, "notes/todo.md", "- ship it\n")
    write(typo, "debug.log", "ignored\n")
    const busy = addWorktree(repo, "busy")
    write(busy, "wip.txt", "a run is writing this\n")
    git(repo, "worktree", "lock", "--reason", "flotta run busy", busy)
    const loose = addWorktree(repo, "loose", { detached: true })
    write(loose, "README", "on no branch\n")

    const alone = await flotta(repo, anonymous, "gc", "--discard")
    assert.strictEqual(alone.code, 2)
    assert.strictEqual(alone.stderr, "flotta: --discard: throws uncommitted work away, so it needs --force as well\n")
    assert.strictEqual(alone.stdout, "")
    assert.isTrue(fs.existsSync(clean), "a usage error touches nothing")

    const gentle = await flotta(repo, anonymous, "gc")
    assert.strictEqual(gentle.code, 0, gentle.stderr)
    const gentleLines = gentle.stdout.trimEnd().split("\n").sort()
    assert.deepStrictEqual(gentleLines, [
      "kept .claude/worktrees/busy: it is locked; if no run uses it any more, `git worktree unlock <path>` releases it",
      "kept .claude/worktrees/loose: it has uncommitted changes to README (use --force to commit them to its branch " +
      "and remove it)",
      "kept .claude/worktrees/typo: it has uncommitted changes to README, notes/todo.md (use --force to commit them " +
      "to its branch and remove it)",
      "removed .claude/worktrees/clean"
    ])
    assert.isFalse(fs.existsSync(clean))

    // A hook that refuses the commit: the worktree stays, with git's words.
    const hook = path.join(repo, ".git", "hooks", "prepare-commit-msg")
    fs.writeFileSync(hook, "#!/bin/sh\necho 'no commits on Fridays' >&2\nexit 1\n", { mode: 0o755 })
    const refused = await flotta(repo, anonymous, "gc", "--force", "--json")
    assert.strictEqual(refused.code, 0, refused.stderr)
    const refusedJson = JSON.parse(refused.stdout) as GcJson
    assert.deepStrictEqual(refusedJson.removed, [])
    const typoKept = refusedJson.kept.find((k) => k.path === typo)
    assert.match(typoKept!.reason, /^it has uncommitted changes to README, notes\/todo\.md, and committing them failed/)
    assert.include(typoKept!.reason, "no commits on Fridays")
    assert.strictEqual(fs.readFileSync(path.join(typo, "notes/todo.md"), "utf8"), "- ship it\n", "nothing lost")
    fs.rmSync(hook)

    // With no identity in git's config, the commit is flotta's.
    const forced = await flotta(repo, anonymous, "gc", "--force", "--json")
    assert.strictEqual(forced.code, 0, forced.stderr)
    const forcedJson = JSON.parse(forced.stdout) as GcJson
    assert.strictEqual(forcedJson.repo, repo)
    assert.deepStrictEqual(forcedJson.removed, [typo])
    assert.deepStrictEqual(forcedJson.discarded, [])
    assert.strictEqual(forcedJson.committed.length, 1)
    const [saved] = forcedJson.committed
    assert.deepInclude(saved, { path: typo, branch: "worktree-typo", files: ["README", "notes/todo.md"] })
    assert.strictEqual(git(repo, "rev-parse", "worktree-typo"), saved!.commit)
    assert.strictEqual(git(repo, "show", "worktree-typo:notes/todo.md"), "- ship it")
    assert.strictEqual(git(repo, "show", "worktree-typo:README"), "hello, fixed")
    assert.strictEqual(
      git(repo, "ls-tree", "-r", "--name-only", "worktree-typo").split("\n").sort().join(" "),
      ".gitignore README notes/todo.md"
    )
    assert.strictEqual(
      git(repo, "log", "-1", "--format=%an <%ae> %s", "worktree-typo"),
      "flotta <flotta@localhost> flotta gc: the uncommitted work of typo, saved before its worktree was removed"
    )
    assert.deepStrictEqual(forcedJson.kept.map((k) => k.path).sort(), [busy, loose])
    assert.strictEqual(
      forcedJson.kept.find((k) => k.path === loose)!.reason,
      "it has uncommitted changes to README and is on no branch to commit them to: commit them yourself, or use " +
        "--force --discard to drop them"
    )

    // With an identity configured, the commit is the user's; the text says where the work went.
    const ada = gitConfig("ada", { name: "Ada", email: "ada@example.com" })
    const second = addWorktree(repo, "second")
    write(second, "src/new.ts", "export const x = 1\n")
    const told = await flotta(repo, ada, "gc", "--force")
    assert.strictEqual(told.code, 0, told.stderr)
    const head = git(repo, "rev-parse", "worktree-second")
    assert.include(
      told.stdout,
      `removed .claude/worktrees/second: its uncommitted work (src/new.ts) was first committed to branch ` +
        `worktree-second (${head.slice(0, 12)})\n`
    )
    assert.strictEqual(git(repo, "log", "-1", "--format=%an <%ae>", "worktree-second"), "Ada <ada@example.com>")

    // Only --force --discard throws work away, and it names each file; a locked worktree is still kept.
    const dropped = await flotta(repo, anonymous, "gc", "--force", "--discard")
    assert.strictEqual(dropped.code, 0, dropped.stderr)
    assert.strictEqual(
      dropped.stdout,
      "removed .claude/worktrees/loose: discarded its uncommitted changes to README\n" +
        "kept .claude/worktrees/busy: it is locked; if no run uses it any more, `git worktree unlock <path>` " +
        "releases it\n"
    )
    assert.isFalse(fs.existsSync(loose))
    assert.strictEqual(fs.readFileSync(path.join(busy, "wip.txt"), "utf8"), "a run is writing this\n")
  })
})
