use super::*;
use crate::store::test_dir::TempDir;
use proptest::prelude::*;

/// The reference: the in-memory sort the index was made with before.
fn naive(text: &[u8]) -> Vec<u8> {
    crate::store::archive::cdxj::sort_lines(text)
}

fn sorted(dir: &Path, text: &[u8], run_bytes: usize, fan_in: usize) -> Vec<u8> {
    let out = dir.join("x.cdxj.tmp");
    let mut sorter = LineSorter::with_limits(&out, run_bytes, fan_in);
    sorter.push_lines(text).unwrap();
    sorter.write_to_file(&out).unwrap();
    let got = fs::read(&out).unwrap();
    let names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["x.cdxj.tmp"], "only the output is left");
    fs::remove_file(&out).unwrap();
    got
}

#[test]
fn many_runs_over_several_merge_levels_sort_as_in_memory() {
    let d = TempDir::new("line_sort", "levels");
    // 20,000 index-like lines in a scrambled order, in runs of 2 KiB merged 3 at a time:
    // about 300 runs, so merges of merges, and a final pass.
    let mut text = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for i in 0..20_000u32 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let key = x % 5000; // duplicates too
        text.extend_from_slice(
            format!("com,h{key})/p{} 2026 {{\"n\": {i}}}\n", key % 7).as_bytes(),
        );
    }
    assert_eq!(sorted(&d.0, &text, 2048, 3), naive(&text));
    // One run: sorted in memory, no run file.
    assert_eq!(sorted(&d.0, &text, RUN_BYTES, FAN_IN), naive(&text));
}

#[test]
fn runs_on_disk_stay_few() {
    let d = TempDir::new("line_sort", "few");
    let out = d.0.join("y.tmp");
    let mut sorter = LineSorter::with_limits(&out, 64, 4);
    for i in 0..50_000u32 {
        sorter
            .push(format!("{:010}", i.wrapping_mul(2_654_435_761)).as_bytes())
            .unwrap();
        // A counter in base 4: at most 3 runs a level, and 50,000 lines of 11 bytes in runs
        // of 64 bytes (10,000 runs) need 7 levels.
        assert!(sorter.runs.len() <= 3 * 8, "{} runs", sorter.runs.len());
    }
    sorter.write_to_file(&out).unwrap();
    let got = fs::read(&out).unwrap();
    assert_eq!(got.len(), 50_000 * 11);
    assert!(got
        .split(|&b| b == b'\n')
        .collect::<Vec<_>>()
        .windows(2)
        .all(|w| w[0] <= w[1] || w[1].is_empty()));
}

#[test]
fn the_output_may_replace_a_stale_file_of_its_name() {
    // A crash can leave the output's name (as a run file or a half-written output): the next
    // sort of the same index writes over it.
    let d = TempDir::new("line_sort", "stale");
    let out = d.0.join("z.cdxj.tmp");
    fs::write(&out, "stale\n").unwrap();
    let input = d.0.join("z.cdxj.open");
    fs::write(&input, "b 2\na 1\n\nc 3").unwrap();
    sort_file(&input, &out).unwrap();
    assert_eq!(fs::read(&out).unwrap(), b"a 1\nb 2\nc 3\n");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the lines (empty ones, a last one without `\n`, prefixes of each other,
    /// bytes below `\n`), the sort is the in-memory one, byte for byte.
    #[test]
    fn any_text_sorts_as_in_memory(
        text in proptest::collection::vec(
            prop::sample::select(vec![b'a', b'b', b'\t', b' ', b'\n', b'\n', 0x00, 0xFF]),
            0..600,
        ),
        run_bytes in 1usize..64,
        fan_in in 2usize..5,
    ) {
        let d = TempDir::new("line_sort", "prop");
        prop_assert_eq!(sorted(&d.0, &text, run_bytes, fan_in), naive(&text));
    }
}

#[test]
fn sorted_files_merge_into_one_sorted_stream_in_passes() {
    let dir = TempDir::new("line_sort", "merge-files");
    // 37 files of sorted lines, merged 4 at a time: three passes before the last.
    let mut files = Vec::new();
    let mut all = Vec::new();
    for f in 0..37u32 {
        let mut lines: Vec<String> = (0..(f % 5) * 3)
            .map(|i| format!("k{:04} f{f}", (i * 7919 + f * 31) % 1000))
            .collect();
        lines.sort();
        let mut text = String::new();
        for l in &lines {
            text.push_str(l);
            text.push('\n');
        }
        all.extend_from_slice(text.as_bytes());
        let path = dir.0.join(format!("in{f}"));
        fs::write(&path, &text).unwrap();
        files.push(File::open(&path).unwrap());
    }
    let mut out = Vec::new();
    merge_sorted_files(files, &dir.0.join("scratch"), 4, &mut out).unwrap();
    assert_eq!(out, naive(&all));
    assert!(!dir.0.join("scratch").exists(), "run files are unlinked");
}
