// Package beamdp runs the DP set union mechanisms of sqlext/setunion as an
// Apache Beam pipeline (Go SDK), so that inputs far larger than one machine's
// memory are released by an existing distributed engine: the same pipeline
// runs on the in-process prism runner, Dataflow, Flink or Spark.
//
// It is built on the privacy core and adds no mechanism of its own:
// setunion.Calibrate is the one source of truth for σ, λ, ρ and Γ (every
// DoFn recomputes it from the same Options), setunion.Histogram holds every
// update rule, securerand supplies the randomness (crypto/rand in production,
// one generator per DoFn instance), and every release decision is one exact
// securerand.Bernoulli draw per item on P(H[u] + Z > ρ), so no noisy weight
// ever exists. Only the released items leave the pipeline, sorted.
//
// # Pipeline
//
// The input is a PCollection of (privacy unit, item) pairs, KV<string,
// string>, or of rows KV<string, []string> holding several items of one user
// (the tokens of one text row; fewer elements, same result). Pairs with an
// empty privacy unit are dropped silently, as in the core. Then
// (docs/privacy.md §1):
//
//   - Parallel mechanisms (count_*, weighted_*, single_item): group each
//     user's rows (in dictionary-encoded blocks, one per bundle and user
//     shard of a fixed hash, GroupByKey on the shard, then by user inside
//     it: blocks.go), deduplicate, bound to Δ0 items sampled uniformly
//     without replacement (securerand.SampleInPlace), compute each kept
//     item's weight with the mechanism's update rule (a one-user
//     setunion.Histogram), sum the weights per item (within a user block,
//     then over blocks after a GroupByKey on an item shard), and release each
//     item of positive weight with one Bernoulli draw. These mechanisms do
//     not depend on the order of users, so the sum over all users is exactly
//     the core's H; a user is in one user shard, so the shards change only
//     how the work is split.
//
//   - dp_sips: the same, once per round r = 0..R−1, each round its own Beam
//     stage with the round's (σ_r, ρ_r) from setunion.Calibrate; the items
//     released by earlier rounds reach the next round through a join with
//     the user blocks by user shard (CoGroupByKey; not a side input, which a
//     runner may hand out before it is complete: sips.go) and are removed
//     from every user's set before it is bounded again (Swanberg et al.
//     2023; docs/privacy.md §5).
//
//   - Sequential mechanisms (policy_laplace, policy_gaussian_l2,
//     greedy_frequency, greedy_public; the core refuses the disabled
//     policy_gaussian_l1, and so does Union), sharded: every user
//     goes to shard ⌊S·h(user)/2⁶⁴⌋, h = setunion.UserHash under a 128-bit key
//     drawn fresh for each run; each shard is one GroupByKey group in which a
//     setunion.Builder runs the policy over the shard's users in h order
//     (Builder.Weights); the S shard histograms are summed per item and
//     released as above. Shards are contiguous ranges of h, so for S = 1 this
//     is exactly the single-machine mechanism, and for any S the shards, read
//     in order, visit users in the single-machine order. greedy_public's
//     public frequency table joins the shards (CoGroupByKey by shard; not a
//     side input, which a runner may hand out before it is complete), so
//     every shard reads the whole table.
//
// # Why sharding keeps the threshold (sensitivity of the summed histogram)
//
// Let D and D′ = D ∪ {x} be neighbouring databases, with the same key, the
// same bounded subsets for the users they share, and write H = Σ_s H_s for
// the summed histogram. The shard of a user is a function of the key and of
// that user's own id only, so x lands in exactly one shard j and every other
// shard receives the same users, in the same order, with the same subsets:
// H_s = H′_s for s ≠ j. Inside shard j the policy is the single-machine policy
// over the shard's users, and its update rules are contractive (Gopi et al.
// 2020, Theorem 1.1; Carvalho et al. 2022, Lemma 1): up to x both runs are
// equal, x's update moves H′_j by at most 1 in the policy's norm (ℓ1 for
// policy_laplace and the greedy rules, ℓ2 for the Gaussian policies), and
// every later user keeps the distance ≤ 1. Hence
//
//	‖H − H′‖_p = ‖H_j − H′_j‖_p ≤ 1,
//
// the sensitivity the single-machine noise scale is calibrated for. The items
// of x that D does not hold are touched by no other user and by no other
// shard, so their weights in H′ are what x's own update gave them, exactly as
// on one machine: with t such items, each gets at most 1/t (ℓ1 water-filling)
// or 1/√t (ℓ2 budget), and at most a total of 1 under the greedy rules, whose
// threshold assumes that. The threshold ρ of setunion.Calibrate, which bounds
// the probability that any of them is released by δ, therefore applies
// unchanged: the sharded mechanism is (ε, δ)-DP with the calibration of the
// single-machine one.
//
// What sharding changes is utility, not privacy. Each shard's policy sees
// only its own users' histogram: it keeps raising an item that other shards
// have already pushed past ρ (up to S·Γ in total), but it also gives more to
// items that are still far from Γ within the shard. Which effect wins depends
// on the data and the options; on git_rails and git_python_ecosystem the
// release of policy_gaussian_l2 changed by between −14% and +16% for S = 4 and
// S = 16 (see docs/beam.md). The property test (TestShardedSensitivity, in
// beam/internal/shard, on the functions the shard DoFns call) checks
// the distance and the new items' weights on many random neighbouring
// databases.
//
// # Operator statistics
//
// ReadRows and Union also return statistics: the rows read, the (user,
// item) occurrences, users, distinct (user, item) pairs, distinct items and
// released items, as a PCollection of partial counts that each DoFn emits
// once per bundle. WriteStats sums them and writes them to a file with the
// released items; ReadStats reads them back (Stats). They are pipeline
// output, so they are complete whenever the pipeline succeeded, on every
// runner; Beam metrics, which an earlier version used, are not (a runner
// may report them partially: prism v2.77.0 loses counts when it splits a
// bundle). They describe the input exactly and are for the operator who
// holds the data, like the core's Stats, never for an analyst.
//
// CurrentProgress counts the work of the workers in this process while a
// pipeline runs (prism runs them in the launching process), for progress
// output only.
//
// # Randomness
//
// In production every DoFn instance draws from its own securerand.New()
// (crypto/rand), and the user-hash key comes from crypto/rand at pipeline
// construction. With Config.Seed every random choice is derived from the seed
// and from the element it concerns (the user for bounding, the item for a
// release decision, the shard for a policy), so a seeded run is reproducible
// whatever the runner's bundling, and for the same reason NOT private: it is
// for tests only.
package beamdp
