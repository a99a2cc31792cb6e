//! The catalogue and its judge, without root: the copy in findings/ is the
//! shared one, every entry parses, every experiment's `[[judge]]` names an
//! entry it can judge, and the policy of findings/README.md applied to
//! fabricated runs (the judge's input, not real runs): rule 1's ten
//! repetitions, rule 3's geometric mean, rule 4's "up to", counts of round
//! trips rounded per repetition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aerolink_experiments::catalogue::{self, Entry, Kind, Paper, Verdict};
use aerolink_experiments::experiment::Experiment;
use aerolink_experiments::judge::{self, Source};
use aerolink_experiments::store::RunRow;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_copy_is_the_shared_catalogue() {
    let shared = root().join("../shared/findings");
    if !shared.is_dir() {
        eprintln!("skipped: {} is not on this machine, so the copy in findings/ cannot be compared with it", shared.display());
        return;
    }
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
        v.sort();
        v
    };
    assert_eq!(names(&root().join("findings")), names(&shared), "findings/ and ../shared/findings hold different files");
    for n in names(&shared) {
        let (ours, theirs) = (std::fs::read(root().join("findings").join(&n)).unwrap(), std::fs::read(shared.join(&n)).unwrap());
        assert!(ours == theirs, "findings/{n} differs from ../shared/findings/{n}: copy it again (entries change only there, from the seed text)");
    }
}

#[test]
fn every_entry_parses_once() {
    let entries = catalogue::load(&root().join("findings")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(entries.len(), 232);
    for seed in ["000", "001", "002", "003", "004"] {
        assert!(entries.iter().any(|e| e.seed == seed), "no entry of seed {seed}");
    }
    assert!(entries.iter().all(|e| e.kind == Kind::Qualitative || e.paper.is_some()));
}

#[test]
fn every_mapping_names_an_entry_it_can_judge() {
    let entries = catalogue::load(&root().join("findings")).unwrap();
    let mut mapped = 0;
    for f in std::fs::read_dir(root().join("experiments")).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "toml")) {
        let e = Experiment::load(&f.to_string_lossy()).unwrap_or_else(|err| panic!("{err}"));
        for m in &e.judges {
            let entry = entries.iter().find(|x| x.id == m.id).unwrap_or_else(|| panic!("{}: judge {:?} is not in the catalogue", f.display(), m.id));
            m.fits(entry.kind).unwrap_or_else(|why| panic!("{}: {}: {why}", f.display(), m.id));
            mapped += 1;
        }
    }
    assert!(mapped >= 60, "only {mapped} entries mapped");
}

fn entry(id: &str, kind: Kind, paper: f64) -> Entry {
    Entry { id: id.into(), seed: "000".into(), place: "§6".into(), claim: "c".into(), kind, paper: Some(Paper::One(paper)), conditions: "c".into(), note: None }
}

/// `n` successful runs of `profile` whose `metric` is `f(i)`.
fn runs(profile: &str, n: usize, f: impl Fn(usize) -> f64) -> Vec<RunRow> {
    (0..n)
        .map(|i| {
            RunRow {
                profile: profile.into(),
                protocol: "h1".into(),
                params: "p".into(),
                ok: true,
                metrics: BTreeMap::from([(aerolink_experiments::metric::Metric::PltMs, f(i))]),
                ..Default::default()
            }
            .with_series()
        })
        .collect()
}

fn mapping(toml: &str) -> Vec<judge::Mapping> {
    judge::parse(&toml.parse().unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// Deterministic spread around `x`: ±5 %.
fn around(x: f64) -> impl Fn(usize) -> f64 {
    move |i| x * (0.95 + 0.1 * ((i * 7919) % 10) as f64 / 9.0)
}

#[test]
fn a_ratio_is_judged_by_its_band_over_ten_repetitions() {
    let m = mapping("[[judge]]\nid = \"r\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\n");
    let e = entry("r", Kind::Ratio, 0.4);
    let all: Vec<RunRow> = [runs("a", 10, around(40.0)), runs("b", 10, around(100.0))].concat();
    let j = judge::judge(&e, &m[0], "x", &all);
    assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
    assert!((j.value.unwrap() - 0.4).abs() < 0.02 && j.lo.unwrap() < 0.4 && j.hi.unwrap() > 0.39, "{j:?}");
    // 0.8: the right side of 1, outside [0.16, 0.63].
    let all: Vec<RunRow> = [runs("a", 10, around(80.0)), runs("b", 10, around(100.0))].concat();
    assert_eq!(judge::judge(&e, &m[0], "x", &all).verdict, Verdict::DirectionOnly);
    // 1.3: the wrong side.
    let all: Vec<RunRow> = [runs("a", 10, around(130.0)), runs("b", 10, around(100.0))].concat();
    assert_eq!(judge::judge(&e, &m[0], "x", &all).verdict, Verdict::DoesNotHold);
    // Nine repetitions a side are not enough, however clear.
    let all: Vec<RunRow> = [runs("a", 9, around(40.0)), runs("b", 9, around(100.0))].concat();
    let j = judge::judge(&e, &m[0], "x", &all);
    assert_eq!(j.verdict, Verdict::Inconclusive);
    assert!(j.why.unwrap().contains("at least 10"));
    // No runs: not run, and why.
    let j = judge::judge(&e, &m[0], "x", &runs("b", 10, around(1.0)));
    assert_eq!(j.verdict, Verdict::NotRun);
    assert!(j.why.unwrap().contains("profile a"));
    // Failed runs of the selection are left out of the figure, and the
    // verdict says how many and why; one of another profile is not counted.
    let failed = |profile: &str| {
        RunRow { profile: profile.into(), protocol: "h1".into(), params: "p".into(), ok: false, error: Some("the client did not finish within the run's timeout (300 s)".into()), ..Default::default() }
            .with_series()
    };
    let all: Vec<RunRow> = [runs("a", 10, around(40.0)), runs("b", 10, around(100.0)), vec![failed("a"), failed("a"), failed("c")]].concat();
    let j = judge::judge(&e, &m[0], "x", &all);
    assert_eq!((j.verdict, j.reps), (Verdict::Holds, 10), "{j:?}");
    assert!(j.setup.as_deref().unwrap_or("").contains("2 failed runs of these left out (the first: the client did not finish within the run's timeout (300 s))"), "{j:?}");
    assert!(judge::judge(&e, &m[0], "x", &[runs("a", 10, around(40.0)), runs("b", 10, around(100.0))].concat()).setup.is_none());
}

#[test]
fn cases_combine_by_geometric_mean_or_the_most_extreme() {
    // Two cases, ratios 0.25 and 1.0: geometric mean 0.5; "up to" (paper
    // below 1) takes the smaller, 0.25.
    let two = "metric = \"plt_ms\"\ncases = [{ of = { profile = \"a1\" }, vs = { profile = \"b1\" } }, { of = { profile = \"a2\" }, vs = { profile = \"b2\" } }]\n";
    let all: Vec<RunRow> = [runs("a1", 10, around(25.0)), runs("b1", 10, around(100.0)), runs("a2", 10, around(100.0)), runs("b2", 10, around(100.0))].concat();
    let mean = mapping(&format!("[[judge]]\nid = \"g\"\n{two}"));
    let j = judge::judge(&entry("g", Kind::Ratio, 0.5), &mean[0], "x", &all);
    assert!((j.value.unwrap() - 0.5).abs() < 0.02, "{j:?}");
    assert_eq!(j.verdict, Verdict::Holds);
    let most = mapping(&format!("[[judge]]\nid = \"g\"\nover = \"most\"\n{two}"));
    let j = judge::judge(&entry("g", Kind::Ratio, 0.25), &most[0], "x", &all);
    assert!((j.value.unwrap() - 0.25).abs() < 0.02, "{j:?}");
    // "In all" for an at-most-1 claim: the least favourable case, 1.0,
    // which is not below 1.
    let least = mapping(&format!("[[judge]]\nid = \"g\"\nover = \"least\"\n{two}"));
    let j = judge::judge(&entry("g", Kind::AtMost, 1.0), &least[0], "x", &all);
    assert!((j.value.unwrap() - 1.0).abs() < 0.06, "{j:?}");
    assert_ne!(j.verdict, Verdict::Holds);
}

#[test]
fn grouped_cases_are_averaged_within_a_group_before_the_least_favourable_group_is_chosen() {
    // Site A: ratios 2.0 and 1.0 (geometric mean 1.41); site B: 1.2 and
    // 1.3 (1.25). "At least 1.18 in the least favourable site" takes site
    // B's 1.25, not the single least case (1.0).
    let four = "metric = \"plt_ms\"\nover = \"least\"\ncases = [\
        { of = { profile = \"a1\" }, vs = { profile = \"b\" }, group = \"A\" }, { of = { profile = \"a2\" }, vs = { profile = \"b\" }, group = \"A\" },\
        { of = { profile = \"b1\" }, vs = { profile = \"b\" }, group = \"B\" }, { of = { profile = \"b2\" }, vs = { profile = \"b\" }, group = \"B\" }]\n";
    let all: Vec<RunRow> = [runs("a1", 10, around(200.0)), runs("a2", 10, around(100.0)), runs("b1", 10, around(120.0)), runs("b2", 10, around(130.0)), runs("b", 10, around(100.0))].concat();
    let m = mapping(&format!("[[judge]]\nid = \"s\"\n{four}"));
    let j = judge::judge(&entry("s", Kind::AtLeast, 1.18), &m[0], "x", &all);
    assert!((j.value.unwrap() - (1.2f64 * 1.3).sqrt()).abs() < 0.03, "{j:?}");
    // The same cases ungrouped: the least case, about 1.0.
    let m = mapping(&format!("[[judge]]\nid = \"s\"\n{}", four.replace(", group = \"A\"", "").replace(", group = \"B\"", "")));
    let j = judge::judge(&entry("s", Kind::AtLeast, 1.18), &m[0], "x", &all);
    assert!((j.value.unwrap() - 1.0).abs() < 0.06, "{j:?}");
    assert_eq!(j.verdict, Verdict::DoesNotHold);
}

/// "In a third of samples MSS falls below DA2GC's median": the share of
/// one side's repetitions below the other side's statistic.
#[test]
fn a_share_below_counts_one_side_under_the_others_median() {
    let m = mapping("[[judge]]\nid = \"s\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\nquantity = \"share-below\"\nstatistic = \"median\"\n");
    // a: 10, 20, …, 300 against b's median 100: 9 of 30 below, 30 %.
    let all: Vec<RunRow> = [runs("a", 30, |i| 10.0 * (i + 1) as f64), runs("b", 30, around(100.0))].concat();
    let j = judge::judge(&entry("s", Kind::Value, 33.3), &m[0], "x", &all);
    assert!((j.value.unwrap() - 30.0).abs() < 3.4, "{j:?}");
    assert!(j.lo.unwrap() < 30.0 && j.hi.unwrap() > 30.0, "{j:?}");
    // Everything above: none below, outside 33.3 ± 25 %.
    let all: Vec<RunRow> = [runs("a", 30, |i| 200.0 + i as f64), runs("b", 30, around(100.0))].concat();
    let j = judge::judge(&entry("s", Kind::Value, 33.3), &m[0], "x", &all);
    assert_eq!((j.value, j.verdict), (Some(0.0), Verdict::DoesNotHold), "{j:?}");
    // It needs the other side.
    let e = judge::parse(&"[[judge]]\nid = \"s\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nquantity = \"share-below\"\n".parse().unwrap()).unwrap_err().to_string();
    assert!(e.contains("needs vs"), "{e}");
}

#[test]
fn round_trips_are_counted_per_repetition() {
    // Update times of 1.1–1.3 s at 600 ms RTT are 2 round trips each.
    let m = mapping("[[judge]]\nid = \"c\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nper = 600\n");
    let j = judge::judge(&entry("c", Kind::Count, 2.0), &m[0], "x", &runs("a", 10, |i| 1100.0 + 20.0 * i as f64));
    assert_eq!((j.verdict, j.lo, j.hi), (Verdict::Holds, Some(2.0), Some(2.0)));
    let j = judge::judge(&entry("c", Kind::Count, 1.0), &m[0], "x", &runs("a", 10, |i| 1100.0 + 20.0 * i as f64));
    assert_eq!(j.verdict, Verdict::DoesNotHold);
}

#[test]
fn the_whole_catalogue_gets_a_verdict_each_and_a_score() {
    let entries = catalogue::load(&root().join("findings")).unwrap();
    let m = mapping("[[judge]]\nid = \"iridium-ping-ir-pots-mean\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nscale = 0.001\n");
    let r = runs("a", 10, around(1200.0));
    let judged = judge::judge_catalogue(&entries, &[Source { experiment: "x", mappings: &m, runs: &r }], false);
    assert_eq!(judged.len(), entries.iter().filter(|e| !e.withdrawn()).count());
    let j = judged.iter().find(|j| j.entry.id == "iridium-ping-ir-pots-mean").unwrap();
    assert_eq!(j.verdict, Verdict::Holds, "{j:?}");
    let scores = judge::scores(&judged);
    let s4 = scores.iter().find(|s| s.seed == "004").unwrap();
    assert_eq!(s4.holds, 1);
    assert_eq!(s4.scored, entries.iter().filter(|e| e.seed == "004" && e.scored()).count());
    assert!(s4.study.contains("Torgerson"));
    let page = aerolink_experiments::reproductions::markdown(&judged, &[], "aerolink experiment check", "2026-11-26", "abc1234");
    assert!(page.contains("| `iridium-ping-ir-pots-mean` |") && page.contains("**holds**") && page.contains("abc1234"));
}

#[test]
fn an_explanation_judges_its_entry_only_when_its_file_is_checked() {
    let entries = vec![entry("c", Kind::Count, 2.0)];
    // The study's setup: one round trip (does not hold); the explanation's
    // setup: two (holds). The catalogue keeps the first.
    let main = mapping("[[judge]]\nid = \"c\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nper = 600\n");
    let why = mapping("[[judge]]\nid = \"c\"\nmetric = \"plt_ms\"\nof = { profile = \"b\" }\nper = 600\nexplanation = \"the seed's delay is per pass\"\n");
    let (ra, rb) = (runs("a", 10, around(600.0)), runs("b", 10, around(1200.0)));
    let sources = [Source { experiment: "why", mappings: &why, runs: &rb }, Source { experiment: "main", mappings: &main, runs: &ra }];
    let j = &judge::judge_catalogue(&entries, &sources, false)[0];
    assert_eq!((j.verdict, j.experiment.as_deref()), (Verdict::DoesNotHold, Some("main")));
    let j = &judge::judge_catalogue(&entries, &sources[..1], true)[0];
    assert_eq!(j.verdict, Verdict::Holds);
    assert!(j.setup.as_deref().is_some_and(|s| s.starts_with("tests an explanation: the seed's delay is per pass")), "{j:?}");
    // Alone in the catalogue, an explanation is no verdict either.
    assert_eq!(judge::judge_catalogue(&entries, &sources[..1], false)[0].verdict, Verdict::NotRun);
    // The page lists it apart, with its hypothesis.
    let why = judge::judge_explanations(&entries, &sources);
    assert_eq!(why.iter().map(|j| (j.entry.id.as_str(), j.verdict)).collect::<Vec<_>>(), vec![("c", Verdict::Holds)]);
    let page = aerolink_experiments::reproductions::markdown(&judge::judge_catalogue(&entries, &sources, false), &why, "aerolink experiment check", "2026-11-27", "abc1234");
    let tail = &page[page.find("## Explanations tested").expect("the explanations' section")..];
    assert!(tail.contains("| `c` |") && tail.contains("**holds**") && tail.contains("the seed's delay is per pass"), "{tail}");
}

#[test]
fn a_side_with_a_figure_takes_only_the_runs_that_have_it_and_an_event_never_seen_is_inconclusive() {
    use aerolink_experiments::metric::Metric::SenderTimeouts;
    let m = mapping("[[judge]]\nid = \"d\"\nmetric = \"plt_ms\"\nof = { profile = \"a\", with = { sender_timeouts = 2 } }\nvs = { profile = \"a\", with = { sender_timeouts = 1 } }\nscale = 0.001\n");
    let mut e = entry("d", Kind::Difference, 8.0);
    e.note = Some("Needs runs with two timeouts on one side; the 10-per-side minimum does not apply, the README's minimum of 3 does.".into());
    let with = |n: usize, timeouts: f64, ms: f64| -> Vec<RunRow> {
        runs("a", n, around(ms))
            .into_iter()
            .map(|mut r| {
                r.metrics.insert(SenderTimeouts, timeouts);
                r
            })
            .collect()
    };
    // Four runs with two timeouts (the entry's note lifts rule 1's ten to
    // three), twenty with one, ten with none (taken by neither side).
    let all = [with(4, 2.0, 20_000.0), with(20, 1.0, 12_000.0), with(10, 0.0, 1_000.0)].concat();
    let j = judge::judge(&e, &m[0], "x", &all);
    assert_eq!((j.verdict, j.reps), (Verdict::Holds, 4), "{j:?}");
    assert!((j.value.unwrap() - 8.0).abs() < 0.5, "{j:?}");
    // The entry without that note needs ten a side.
    e.note = None;
    assert_eq!(judge::judge(&e, &m[0], "x", &all).verdict, Verdict::Inconclusive);
    // No run timed out twice: the event never happened (rule 5).
    let j = judge::judge(&e, &m[0], "x", &[with(20, 1.0, 12_000.0), with(10, 0.0, 1_000.0)].concat());
    assert_eq!(j.verdict, Verdict::Inconclusive, "{j:?}");
    assert!(j.why.as_deref().is_some_and(|w| w.contains("never happened") && w.contains("sender_timeouts = 2")), "{j:?}");
}

#[test]
fn an_earlier_checks_verdicts_are_kept_only_where_no_store_given_has_runs_and_say_where_from() {
    let entries = vec![entry("r", Kind::Ratio, 0.4), entry("s", Kind::Ratio, 0.4), entry("t", Kind::Ratio, 0.4)];
    let m = mapping("[[judge]]\nid = \"r\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\n[[judge]]\nid = \"s\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\n[[judge]]\nid = \"t\"\nmetric = \"ttfb_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\n");
    let ra: Vec<RunRow> = [runs("a", 10, around(40.0)), runs("b", 10, around(100.0))].concat();
    let both = [Source { experiment: "x", mappings: &m[..1], runs: &ra }, Source { experiment: "y", mappings: &m[1..], runs: &[] }];
    // The earlier check: r and s held (from stores of its own), t was
    // judged by a metric the file no longer maps it to.
    let row = |id: &str, x: &str, metric: &str, v: &str| {
        format!(r#"{{"entry":{{"id":"{id}"}},"experiment":"{x}","metric":"{metric}","form":"ratio","value":0.5,"lo":0.45,"hi":0.55,"reps":12,"verdict":"{v}","why":null,"setup":"s"}}"#)
    };
    let text = format!(
        r#"{{"date":"2026-11-20","commit":"abc1234","entries":[{},{},{}],"explanations":[]}}"#,
        row("r", "x", "plt_ms", "does not hold"),
        row("s", "y", "plt_ms", "holds"),
        row("t", "y", "plt_ms", "holds")
    );
    let dir = std::env::temp_dir().join(format!("aerolink-keep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("before.json");
    std::fs::write(&f, text).unwrap();
    let earlier = judge::Earlier::load(&f).unwrap();
    let mut judged = judge::judge_catalogue(&entries, &both, false);
    let kept = earlier.keep(&mut judged, &mut [], &both);
    let got: Vec<(&str, Verdict, Option<&str>)> = judged.iter().map(|j| (j.entry.id.as_str(), j.verdict, j.kept.as_deref())).collect();
    // r: judged now from its runs (holds), never the earlier verdict;
    // s: kept, with where from; t: its mapping changed, so not kept.
    assert_eq!(got, vec![("r", Verdict::Holds, None), ("s", Verdict::Holds, Some("the check of 2026-11-20 at commit abc1234")), ("t", Verdict::NotRun, None)]);
    assert_eq!(kept, 1);
    let page = aerolink_experiments::reproductions::markdown(&judged, &[], "aerolink experiment check --keep before.json", "2026-11-27", "def5678");
    assert!(page.contains("1 verdict (marked *kept*) comes from an earlier check") && page.contains("*kept* from the check of 2026-11-20 at commit abc1234"), "{page}");
    std::fs::write(&f, "{\"scores\": []}").unwrap();
    let e = judge::Earlier::load(&f).expect_err("refused");
    assert!(e.contains("before.json") && e.contains("experiment check --json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_qualitative_entry_is_observed_when_every_mapping_of_one_experiment_observes_it() {
    let mut e = entry("q", Kind::Qualitative, 0.0);
    e.paper = None;
    let below = "[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nvs = { profile = \"b\" }\nobserve = { what = \"a over b\", below = 0.9 }\n";
    let some = "[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nof = { profile = \"c\" }\nobserve = { what = \"runs of c\", runs = \"some\" }\n";
    let m = mapping(&format!("{below}{some}"));
    let src = |runs: &[RunRow]| -> Verdict {
        let j = judge::judge_catalogue(std::slice::from_ref(&e), &[Source { experiment: "x", mappings: &m, runs }], false);
        j[0].verdict
    };
    let clear = [runs("a", 10, around(50.0)), runs("b", 10, around(100.0)), runs("c", 1, around(1.0))].concat();
    assert_eq!(src(&clear), Verdict::Observed);
    // One observation contradicted: the ratio's interval above 0.9.
    let against = [runs("a", 10, around(100.0)), runs("b", 10, around(100.0)), runs("c", 1, around(1.0))].concat();
    assert_eq!(src(&against), Verdict::NotObserved);
    // The ratio clear, but no run of c: the other observation is not run.
    assert_eq!(src(&[runs("a", 10, around(50.0)), runs("b", 10, around(100.0))].concat()), Verdict::NotRun);
    // Straddling the threshold, or under the policy's ten repetitions: inconclusive.
    let straddle = [runs("a", 10, |i| if i % 2 == 0 { 60.0 } else { 120.0 }), runs("b", 10, around(100.0)), runs("c", 1, around(1.0))].concat();
    assert_eq!(src(&straddle), Verdict::Inconclusive);
    assert_eq!(src(&[runs("a", 9, around(50.0)), runs("b", 9, around(100.0)), runs("c", 1, around(1.0))].concat()), Verdict::Inconclusive);
    // Each observation's figure is in why; the verdict counts apart from the score.
    let j = judge::judge_catalogue(std::slice::from_ref(&e), &[Source { experiment: "x", mappings: &m, runs: &clear }], false);
    let why = j[0].why.clone().unwrap();
    assert!(why.contains("a over b: 0.5") && why.contains("below 0.9") && why.contains("runs of c: 1 of 1 runs"), "{why}");
    let s = &judge::scores(&j)[0];
    assert_eq!((s.scored, s.counts.len(), s.qualitative.get("observed")), (0, 0, Some(&1)), "{s:?}");
    // A scored entry refuses `observe`, a qualitative one needs it.
    let scored = mapping(below);
    assert!(scored[0].fits(Kind::Ratio).unwrap_err().contains("observe is for qualitative entries"));
    let plain = mapping("[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\n");
    assert!(plain[0].fits(Kind::Qualitative).unwrap_err().contains("observe = {"));
    let bad: toml::Table = "[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nof = { profile = \"a\" }\nobserve = { what = \"w\", below = 1, above = 2 }\n".parse().unwrap();
    assert_eq!(judge::parse(&bad).unwrap_err().to_string(), "judge[1].observe: expected one of below = x, above = x, runs = \"some\" or runs = \"none\"");
}

#[test]
fn a_line_and_a_gap_are_observed_over_stored_runs() {
    let q = entry("q", Kind::Qualitative, 0.0);
    let q = Entry { paper: None, ..q };
    // Latency at four offered rates: on a line (1000 + 0.5 x), and a
    // hockey stick (flat, then steep from the last step).
    let case = |x: u32| format!("{{ of = {{ profile = \"r{x}\" }}, x = {x} }}");
    let fit = mapping(&format!(
        "[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nquantity = \"linear-fit\"\ncases = [{}]\nobserve = {{ what = \"R²\", above = 0.9 }}\n",
        [1024, 2048, 4096, 8192].map(case).join(", ")
    ));
    let line: Vec<RunRow> = [1024, 2048, 4096, 8192].iter().flat_map(|x| runs(&format!("r{x}"), 10, around(1000.0 + 0.5 * *x as f64))).collect();
    let j = judge::judge(&q, &fit[0], "x", &line);
    assert_eq!(j.verdict, Verdict::Observed, "{j:?}");
    assert!(j.value.unwrap() > 0.95 && j.why.as_deref().unwrap().starts_with("R²: "), "{j:?}");
    let stick: Vec<RunRow> = [1024, 2048, 4096, 8192].iter().flat_map(|x| runs(&format!("r{x}"), 10, around(if *x < 8192 { 1000.0 } else { 50_000.0 }))).collect();
    let j = judge::judge(&q, &fit[0], "x", &stick);
    assert!(j.value.unwrap() < 0.9, "{j:?}");
    assert_ne!(j.verdict, Verdict::Observed, "{j:?}");
    // The gap between two sides, |of / vs − 1|, larger on the big page
    // (1.5 against 1.05: 0.5 less 0.05) whichever side is slower.
    let gap = mapping("[[judge]]\nid = \"q\"\nmetric = \"plt_ms\"\nquantity = \"gap-difference\"\ncases = [{ of = { profile = \"a-big\" }, vs = { profile = \"b-big\" } }, { of = { profile = \"a-small\" }, vs = { profile = \"b-small\" } }]\nobserve = { what = \"gap\", above = 0 }\n");
    for (big, small) in [(150.0, 105.0), (50.0, 95.0)] {
        let all: Vec<RunRow> = [runs("a-big", 10, around(big)), runs("b-big", 10, around(100.0)), runs("a-small", 10, around(small)), runs("b-small", 10, around(100.0))].concat();
        let j = judge::judge(&q, &gap[0], "x", &all);
        assert_eq!(j.verdict, Verdict::Observed, "{j:?}");
        assert!((j.value.unwrap() - 0.45).abs() < 0.05, "{j:?}");
    }
}
