//! `spinneret wacz DIR… [-o FILE]`: a crawl's directories packed into one WACZ file
//! (`store::wacz`), and the package `--wacz FILE` has `crawl`, `fetch` and `resume` write
//! when a run ends (after Ctrl-C's stop too).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::app::cli::{IndexArg, WaczArgs};
use crate::app::exit::{usage, ExitStatus, Failure};
use crate::app::report::eprint_line;
use crate::store::wacz::index::IndexForm;
use crate::store::wacz::{self, PackOptions, Packed, WaczError};

/// `spinneret wacz`.
pub fn run(args: &WaczArgs) -> Result<ExitStatus, Failure> {
    let out = match &args.out {
        Some(o) => o.clone(),
        None => default_out(&args.dirs[0]),
    };
    if out.exists() && !args.force {
        return Err(usage(format!(
            "{} exists: --force replaces it, or give another -o",
            out.display()
        )));
    }
    let form = match args.index {
        IndexArg::Auto => IndexForm::Auto,
        IndexArg::Plain => IndexForm::Plain,
        IndexArg::Compressed => IndexForm::Compressed,
    };
    pack(&args.dirs, &out, form, args.quiet)?;
    Ok(ExitStatus::Ok)
}

/// `DIR.wacz` beside DIR (its name, trailing `/` or not).
fn default_out(dir: &Path) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "crawl".to_string());
    let parent = dir.parent().unwrap_or(Path::new(""));
    parent.join(format!("{name}.wacz"))
}

/// The package `--wacz FILE` asks for, written from the run's directory when it ends
/// (replacing the one an earlier run of the crawl wrote).
pub fn at_end(dir: &Path, out: &Path, quiet: bool) -> Result<(), Failure> {
    pack(&[dir.to_path_buf()], out, IndexForm::Auto, quiet).map(|_| ())
}

fn pack(dirs: &[PathBuf], out: &Path, index: IndexForm, quiet: bool) -> Result<Packed, Failure> {
    let title = dirs
        .iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let opts = PackOptions {
        index,
        title: format!("spinneret crawl: {title}"),
        created: SystemTime::now(),
    };
    let packed = wacz::pack(dirs, out, &opts).map_err(|e| match e {
        WaczError::Io(..) | WaczError::Wet(..) | WaczError::BadIndexLine(_) => {
            Failure::Output(e.to_string())
        }
        _ => Failure::Usage(e.to_string()),
    })?;
    for open in &packed.skipped_open {
        eprint_line(&format!(
            "spinneret: left out {}: still open (a crawl is writing it, or was killed: \
             `spinneret resume` closes it)",
            open.display()
        ));
    }
    if !quiet {
        let form = match packed.index {
            Some(IndexForm::Compressed) => "compressed",
            _ => "plain",
        };
        eprint_line(&format!(
            "spinneret: WACZ: {} ({:.1} MB): {} WARC files ({:.1} MB), {} index lines ({form}), \
             {} pages\n  open it in https://replayweb.page, or: wb-manager init mycoll && \
             wb-manager add --unpack-wacz mycoll {} && wayback",
            out.display(),
            packed.bytes as f64 / 1e6,
            packed.warc_files,
            packed.warc_bytes as f64 / 1e6,
            packed.index_lines,
            packed.pages,
            out.display()
        ));
    }
    Ok(packed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_package_is_named_after_the_directory_beside_it() {
        assert_eq!(default_out(Path::new("out")), PathBuf::from("out.wacz"));
        assert_eq!(
            default_out(Path::new("a/out/")),
            PathBuf::from("a/out.wacz")
        );
        assert_eq!(
            default_out(Path::new("/data/crawl")),
            PathBuf::from("/data/crawl.wacz")
        );
    }
}
