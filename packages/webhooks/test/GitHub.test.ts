/**
 * GitHub's deliveries as data: the signature, which mappings an event matches (action, label, command,
 * conclusion, repository; each routine or template once), the event told in words, and the config's checks (a
 * mapping naming what is not there is skipped).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either, Schema } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { signature } from "../src/Delivery.js"
import * as GitHub from "../src/GitHub.js"
import { checkMappings, GithubSection, NotifyTarget } from "../src/WebhooksConfig.js"

const fixture = (name: string) =>
  fs.readFileSync(
    path.join(import.meta.dirname, "..", "..", "..", "test", "fixtures", "github", `${name}.json`),
    "utf8"
  )

const payload = (json: unknown) => Either.getOrThrow(GitHub.decode(JSON.stringify(json)))

const repository = { full_name: "acme/app" }
const pr = {
  number: 7,
  title: "Faster start",
  body: "It starts in half the time.",
  html_url: "https://github.com/acme/app/pull/7",
  labels: [{ name: "flotta" }],
  head: { ref: "fast", sha: "abc123" },
  base: { ref: "main" }
}

describe("GitHub deliveries", () => {
  it.effect("the signature is GitHub's: HMAC-SHA256 of the exact body, compared whole", () =>
    Effect.sync(() => {
      const body = fixture("check_run.completed")
      assert.isTrue(GitHub.verify("secret-0123456789abcdef", body, signature("secret-0123456789abcdef", body)))
      assert.isFalse(GitHub.verify("secret-0123456789abcdef", `${body} `, signature("secret-0123456789abcdef", body)))
      assert.isFalse(GitHub.verify("another-secret-01234567", body, signature("secret-0123456789abcdef", body)))
      assert.isFalse(GitHub.verify("secret-0123456789abcdef", body, undefined))
      assert.isFalse(GitHub.verify("secret-0123456789abcdef", body, "sha256=00"))
    }))

  it.effect("a mapping matches on the event, its action, a label, a command, a conclusion and the repository", () =>
    Effect.sync(() => {
      const labeled = payload(JSON.parse(fixture("issues.labeled")))
      assert.isTrue(GitHub.matches({ event: "issues.labeled", label: "flotta", run: "r" }, "issues", labeled))
      assert.isTrue(GitHub.matches({ event: "issues", run: "r" }, "issues", labeled))
      assert.isFalse(GitHub.matches({ event: "issues.opened", run: "r" }, "issues", labeled))
      assert.isFalse(GitHub.matches({ event: "issues.labeled", label: "bug", run: "r" }, "issues", labeled))
      assert.isFalse(
        GitHub.matches({ event: "issues.labeled", repository: "acme/app", run: "r" }, "issues", labeled)
      )
      const comment = payload({
        action: "created",
        repository,
        issue: { number: 3, title: "Crash", body: null, html_url: "https://github.com/acme/app/issues/3" },
        comment: { body: "  /flotta fix it please", html_url: "https://github.com/acme/app/issues/3#c1" }
      })
      assert.isTrue(
        GitHub.matches({ event: "issue_comment.created", command: "/flotta", run: "r" }, "issue_comment", comment)
      )
      assert.isFalse(GitHub.matches({ event: "issue_comment", command: "/deploy", run: "r" }, "issue_comment", comment))
      const check = payload(JSON.parse(fixture("check_run.completed")))
      assert.isTrue(
        GitHub.matches({ event: "check_run.completed", conclusion: "failure", routine: "x" }, "check_run", check)
      )
      assert.isFalse(
        GitHub.matches({ event: "check_run.completed", conclusion: "success", routine: "x" }, "check_run", check)
      )
      assert.isFalse(GitHub.matches({ event: "workflow_run", routine: "x" }, "check_run", check))
    }))

  it.effect("each routine or template fires once, by the first mapping that names it", () =>
    Effect.sync(() => {
      const labeled = payload(JSON.parse(fixture("issues.labeled")))
      const fired = GitHub.fired(
        [
          { event: "issues", run: "runner" },
          { event: "issues.labeled", label: "flotta", run: "runner" },
          { event: "issues.labeled", routine: "triage" },
          { event: "pull_request", routine: "review" }
        ],
        "issues",
        labeled
      )
      assert.deepStrictEqual(fired.map((m) => m.run ?? m.routine), ["runner", "triage"])
    }))

  it.effect("the event is told in words: the check, the workflow, the pull request, the review, the comment", () =>
    Effect.sync(() => {
      // [the event, its payload, what its words include]
      const cases: ReadonlyArray<readonly [string, GitHub.Payload, ReadonlyArray<string>]> = [
        ["check_run", payload(JSON.parse(fixture("check_run.completed"))), [
          "GitHub event check_run.completed in Codertocat/Hello-World by Codertocat.",
          "The check \"test (20.x)\" completed with failure on commit ec26c3e",
          "(branch changes)",
          "2 tests failed"
        ]],
        [
          "workflow_run",
          payload({
            action: "completed",
            repository,
            workflow_run: {
              name: "CI",
              run_number: 41,
              status: "completed",
              conclusion: "failure",
              head_branch: "main",
              head_sha: "def456",
              html_url: "https://github.com/acme/app/actions/runs/9"
            }
          }),
          ["The workflow \"CI\" run #41 completed with failure on commit def456 (branch main)."]
        ],
        ["pull_request", payload({ action: "opened", repository, pull_request: pr }), [
          "Pull request #7: Faster start",
          "Branch fast (abc123) into main.",
          "It starts in half the time."
        ]],
        [
          "pull_request_review",
          payload({
            action: "submitted",
            repository,
            pull_request: pr,
            review: {
              state: "changes_requested",
              body: "Please add a test.",
              html_url: "https://github.com/acme/app/pull/7#r1",
              user: { login: "octo" }
            }
          }),
          ["Review changes_requested by octo", "Please add a test."]
        ]
      ]
      for (const [event, body, words] of cases) {
        const told = GitHub.describe(event, body)
        for (const word of words) assert.include(told, word, event)
      }
      const long = GitHub.describe(
        "issues",
        payload({
          action: "opened",
          repository,
          issue: {
            number: 1,
            title: "Long",
            body: "y".repeat(20_000),
            html_url: "https://github.com/acme/app/issues/1"
          }
        })
      )
      assert.isBelow(long.length, 9000)
      assert.include(long, "[… cut]")
    }))

  it.effect("a body that is not JSON, or not the shape GitHub sends, is said so", () =>
    Effect.sync(() => {
      assert.deepStrictEqual(GitHub.decode("{"), Either.left("the body is not JSON"))
      const bad = GitHub.decode(JSON.stringify({ action: "completed", check_run: { name: 3 } }))
      assert.isTrue(Either.isLeft(bad))
      assert.include(
        Either.getLeft(bad).pipe((o) => (o._tag === "Some" ? o.value : "")),
        "not the payload GitHub sends"
      )
    }))

  it.effect("the config names what is wrong: the event, routine and run together, a short secret, a bad URL", () =>
    Effect.sync(() => {
      const decodeGithub = Schema.decodeUnknownEither(GithubSection)
      const messages = (input: unknown) =>
        Either.match(decodeGithub(input), { onLeft: (e) => e.message, onRight: () => "" })
      assert.include(messages({ secret: "short", on: [] }), "a secret of at least 16 characters")
      assert.include(
        messages({ secret: "0123456789abcdef", on: [{ event: "push", routine: "x" }] }),
        "a GitHub event, optionally with its action"
      )
      assert.include(
        messages({ secret: "0123456789abcdef", on: [{ event: "issues", routine: "x", run: "y" }] }),
        "name exactly one of `routine` and `run`"
      )
      const target = Schema.decodeUnknownEither(NotifyTarget)
      assert.include(
        Either.match(target({ url: "ftp://x", events: ["*"] }), { onLeft: (e) => e.message, onRight: () => "" }),
        "an http:// or https:// URL"
      )
      assert.include(
        Either.match(target({ url: "https://x.example", events: ["crashed"] }), {
          onLeft: (e) => e.message,
          onRight: () => ""
        }),
        "agent_crashed"
      )
    }))

  it.effect("a mapping naming a routine or run template that is not there is skipped at its path; the rest kept", () =>
    Effect.sync(() => {
      const section = Either.getOrThrow(
        Schema.decodeUnknownEither(GithubSection)({
          secret: "0123456789abcdef",
          on: [
            { event: "issues.labeled", label: "flotta", run: "triage" },
            { event: "check_run.completed", routine: "fix-ci" },
            { event: "issues.opened", run: "tirage" },
            { event: "workflow_run.completed", routine: "nightly" }
          ]
        })
      )
      const checked = checkMappings(section, {
        routine: (name) => (name === "nightly" ? undefined : `no routine named "${name}"`),
        run: (name) => (name === "triage" ? undefined : `no run template named "${name}"`)
      })
      assert.deepStrictEqual(checked.section.on.map((m) => m.run ?? m.routine), ["triage", "nightly"])
      assert.strictEqual(checked.section.secret, section.secret)
      assert.deepStrictEqual(checked.rejected.map((r) => [r.entry, r.path, r.message]), [
        ["github.on[1]", "github.on[1].routine", "no routine named \"fix-ci\""],
        ["github.on[2]", "github.on[2].run", "no run template named \"tirage\""]
      ])
    }))
})
