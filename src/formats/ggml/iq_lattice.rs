//! The search tables of ggml's lattice i-quant quantizers, as `iq2xs_init_impl` and
//! `iq3xs_init_impl` (ggml-quants.c @ d99724f2) build them at start-up (`ggml_quantize_init`),
//! here built once, on first use ([`OnceLock`]; no threads, so it works on wasm32 too).
//!
//! A codebook entry (a *grid point*) is a group of `N` levels `l` (8 for IQ2/IQ1, 4 for IQ3)
//! stored as the odd numbers `2l + 1` (`kgrid_q2xs`, `kgrid_q3xs`). The levels are what the
//! decoders' codebooks hold ([`super::grids`]), read back: IQ2 magnitudes {8, 25, 43} are
//! levels 0…2, IQ1 values {−1, 0, 1} levels 0…2, IQ3_XXS magnitudes {4, 12, …, 52, 62} levels
//! 0…7, IQ3_S odd magnitudes `2l + 1` levels 0…7. (ggml builds the same points from its
//! `kgrid_2bit_256` … `kgrid_1bit_2048`, `kgrid_256`, `kgrid_512` index tables; the tests below
//! check entries of those tables.)
//!
//! * **map** (`kmap_q2xs`, `kmap_q3xs`): the packed levels `u = Σ l_i << (b·i)` (`b` = 2 bits
//!   per level for IQ2/IQ1, 3 for IQ3) → the grid index of the point with those levels.
//! * **neighbours** (`kneighbors_q2xs`, …): for every `u` not on the grid, the grid points
//!   closest to the point `2l_i + 1` in squared integer distance `Σ (g_i − (2l_i + 1))²`, sorted
//!   by (distance, index) — ggml's `qsort` with `iq2_compare_func`, a total order — keeping every
//!   point of the `nwant` smallest distinct distances: `nwant` = 2 for IQ2_XXS, IQ2_XS and
//!   IQ3_XXS, 1 for IQ2_S, 3 for IQ1_S/IQ1_M and IQ3_S.
//!
//! ggml fills the neighbour lists for every `u` of the map (43692 for the 2-bit maps: all four
//! 2-bit levels, although the quantizers clamp levels to 0…2). Only packed levels whose every
//! level is at most `max_level` can be looked up, so the lists are built for those alone (6561
//! of the 43692 for the 2-bit maps, all 4096 for IQ3): the same lists, a seventh of the work.

use super::grids::{
    entry_bytes, IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID,
};
use std::sync::OnceLock;

/// The map entry of packed levels whose neighbour list is not built (a level above the
/// quantizers' clamp).
const UNREACHABLE: i32 = i32::MIN;

/// What the map says of packed levels `u`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup<'a> {
    /// `u` is the grid point of this index.
    OnGrid(usize),
    /// `u` is off the grid: its nearest grid points, in ggml's order.
    Neighbours(&'a [u16]),
}

/// A codebook of `N`-level points with ggml's map and neighbour lists.
#[derive(Debug)]
pub struct Lattice<const N: usize> {
    /// Each grid point as `2l + 1` per element (`kgrid_q2xs` / `kgrid_q3xs`).
    points: Vec<[i8; N]>,
    /// Bits per level in a packed `u`.
    bits: u32,
    /// Packed levels → grid index (`≥ 0`), or `−(start + 1)` of its neighbour list: the count
    /// at `start`, then the indices; [`UNREACHABLE`] for levels no quantizer looks up.
    map: Vec<i32>,
    neighbours: Vec<u16>,
}

impl<const N: usize> Lattice<N> {
    /// Build the tables from the points' levels (`levels[k][i]` = level of element `i` of grid
    /// point `k`), with `bits` per level, a map of `map_size` entries, `nwant` distance levels
    /// kept per neighbour list, and lists for the packed levels with every level ≤ `max_level`.
    fn build(levels: &[[u8; N]], bits: u32, map_size: usize, nwant: usize, max_level: u8) -> Self {
        let mask = (1usize << bits) - 1;
        let points: Vec<[i8; N]> = levels
            .iter()
            .map(|l| std::array::from_fn(|i| 2 * l[i] as i8 + 1))
            .collect();
        let mut map = vec![UNREACHABLE; map_size];
        for (k, l) in levels.iter().enumerate() {
            let u = l
                .iter()
                .enumerate()
                .fold(0usize, |u, (i, &v)| u | (v as usize) << (bits as usize * i));
            map[u] = k as i32;
        }
        let mut neighbours: Vec<u16> = Vec::new();
        let mut d2 = vec![0u32; points.len()];
        for (u, entry) in map.iter_mut().enumerate() {
            if *entry >= 0 {
                continue;
            }
            let level = |i: usize| (u >> (bits as usize * i)) & mask;
            if (0..N).any(|i| level(i) > max_level as usize) {
                continue;
            }
            let pos: [i32; N] = std::array::from_fn(|i| 2 * level(i) as i32 + 1);
            for (d, p) in d2.iter_mut().zip(&points) {
                *d = p
                    .iter()
                    .zip(&pos)
                    .map(|(&g, &q)| ((g as i32 - q) * (g as i32 - q)) as u32)
                    .sum();
            }
            // The `nwant` smallest distinct distances, then every point at each of them in
            // index order: the prefix of the (distance, index) order ggml's qsort gives.
            let mut kept: Vec<u32> = Vec::with_capacity(nwant);
            for _ in 0..nwant {
                let above = kept.last().copied();
                let next = d2
                    .iter()
                    .copied()
                    .filter(|&d| above.is_none_or(|a| d > a))
                    .min();
                match next {
                    Some(d) => kept.push(d),
                    None => break,
                }
            }
            let start = neighbours.len();
            neighbours.push(0);
            for &dist in &kept {
                neighbours.extend(
                    d2.iter()
                        .enumerate()
                        .filter(|&(_, &d)| d == dist)
                        .map(|(j, _)| j as u16),
                );
            }
            neighbours[start] = (neighbours.len() - start - 1) as u16;
            *entry = -(start as i32 + 1);
        }
        Lattice {
            points,
            bits,
            map,
            neighbours,
        }
    }

    /// Grid point `k` as `2l + 1` per element.
    pub fn point(&self, k: usize) -> &[i8; N] {
        &self.points[k]
    }

    /// Number of grid points.
    pub fn len(&self) -> usize {
        self.points.len()
    }

    /// Whether the grid is empty (never: every codebook has points).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The packed levels `u = Σ l_i << (b·i)` of `levels`.
    pub fn pack(&self, levels: &[i8]) -> usize {
        levels
            .iter()
            .take(N)
            .enumerate()
            .fold(0usize, |u, (i, &l)| {
                u | (l as u8 as usize) << (self.bits as usize * i)
            })
    }

    /// What the map says of packed levels `u`; `None` for one no quantizer can reach (a level
    /// above the clamp, where ggml's list exists but is never read).
    pub fn lookup(&self, u: usize) -> Option<Lookup<'_>> {
        let m = *self.map.get(u)?;
        if m == UNREACHABLE {
            return None;
        }
        if m >= 0 {
            return Some(Lookup::OnGrid(m as usize));
        }
        let start = (-(m + 1)) as usize;
        let count = *self.neighbours.get(start)? as usize;
        self.neighbours
            .get(start + 1..start + 1 + count)
            .map(Lookup::Neighbours)
    }

    /// The grid index of packed levels `u` when it is a grid point.
    pub fn index_of(&self, u: usize) -> Option<usize> {
        match self.lookup(u)? {
            Lookup::OnGrid(k) => Some(k),
            Lookup::Neighbours(_) => None,
        }
    }
}

/// The levels of a codebook's entries, each byte mapped by `level`.
fn levels_of<const N: usize>(
    entries: impl Iterator<Item = u64>,
    level: fn(u8) -> u8,
) -> Vec<[u8; N]> {
    entries.map(|e| entry_bytes::<N>(e).map(level)).collect()
}

/// IQ2 magnitudes {8, 25, 43} → levels 0, 1, 2.
fn iq2_level(b: u8) -> u8 {
    match b {
        0x08 => 0,
        0x19 => 1,
        _ => 2,
    }
}

/// IQ1 values {−1, 0, 1} (int8) → levels 0, 1, 2.
fn iq1_level(b: u8) -> u8 {
    (b as i8 + 1) as u8
}

/// IQ3_XXS magnitudes {4, 12, 20, 28, 36, 44, 52, 62} → levels 0…7.
fn iq3xxs_level(b: u8) -> u8 {
    if b == 62 {
        7
    } else {
        (b.saturating_sub(4)) / 8
    }
}

/// IQ3_S magnitudes `2l + 1` → `l`.
fn iq3s_level(b: u8) -> u8 {
    b.saturating_sub(1) / 2
}

/// The 2-bit maps' size (`kmap_size` of `iq2xs_init_impl`).
const KMAP_Q2_SIZE: usize = 43692;
/// The 3-bit maps' size (`kmap_size` of `iq3xs_init_impl`).
const KMAP_Q3_SIZE: usize = 4096;

/// The IQ2_XXS tables (256 points, `nwant` 2).
pub fn iq2_xxs() -> &'static Lattice<8> {
    static TABLES: OnceLock<Lattice<8>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ2XXS_GRID.iter().copied(), iq2_level);
        Lattice::build(&levels, 2, KMAP_Q2_SIZE, 2, 2)
    })
}

/// The IQ2_XS tables (512 points, `nwant` 2).
pub fn iq2_xs() -> &'static Lattice<8> {
    static TABLES: OnceLock<Lattice<8>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ2XS_GRID.iter().copied(), iq2_level);
        Lattice::build(&levels, 2, KMAP_Q2_SIZE, 2, 2)
    })
}

/// The IQ2_S tables (1024 points, `nwant` 1).
pub fn iq2_s() -> &'static Lattice<8> {
    static TABLES: OnceLock<Lattice<8>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ2S_GRID.iter().copied(), iq2_level);
        Lattice::build(&levels, 2, KMAP_Q2_SIZE, 1, 2)
    })
}

/// The IQ1_S / IQ1_M tables (2048 points, `nwant` 3; both types share `iq2_data[2]`).
pub fn iq1() -> &'static Lattice<8> {
    static TABLES: OnceLock<Lattice<8>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ1S_GRID.iter().copied(), iq1_level);
        Lattice::build(&levels, 2, KMAP_Q2_SIZE, 3, 2)
    })
}

/// The IQ3_XXS tables (`iq3xs_init_impl(256)`: 256 points, `nwant` 2).
pub fn iq3_xxs() -> &'static Lattice<4> {
    static TABLES: OnceLock<Lattice<4>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ3XXS_GRID.iter().map(|&e| e as u64), iq3xxs_level);
        Lattice::build(&levels, 3, KMAP_Q3_SIZE, 2, 7)
    })
}

/// The IQ3_S tables (`iq3xs_init_impl(512)`: 512 points, `nwant` 3).
pub fn iq3_s() -> &'static Lattice<4> {
    static TABLES: OnceLock<Lattice<4>> = OnceLock::new();
    TABLES.get_or_init(|| {
        let levels = levels_of(IQ3S_GRID.iter().map(|&e| e as u64), iq3s_level);
        Lattice::build(&levels, 3, KMAP_Q3_SIZE, 3, 7)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The packed levels of every grid point, in order (ggml's `kgrid_*` index tables).
    fn packed<const N: usize>(lat: &Lattice<N>) -> Vec<usize> {
        (0..lat.len())
            .map(|k| {
                let l: Vec<i8> = lat.point(k).iter().map(|&p| (p - 1) / 2).collect();
                lat.pack(&l)
            })
            .collect()
    }

    #[test]
    fn the_points_are_ggmls_index_tables() {
        // Entries of kgrid_2bit_256, kgrid_2bit_1024, kgrid_256 and kgrid_512 as
        // iq2xs_init_impl / iq3xs_init_impl list them.
        let xxs = packed(iq2_xxs());
        assert_eq!(
            xxs[..20],
            [0, 2, 5, 8, 10, 17, 20, 32, 34, 40, 42, 65, 68, 80, 88, 97, 100, 128, 130, 138]
        );
        let s = packed(iq2_s());
        assert_eq!(
            s[..16],
            [0, 2, 5, 8, 10, 17, 20, 22, 25, 32, 34, 37, 40, 65, 68, 70]
        );
        assert_eq!(
            s[1008..],
            [
                42148, 42240, 42265, 42577, 43018, 43048, 43170, 43348, 43398, 43528, 43530, 43552,
                43554, 43560, 43656, 43690
            ]
        );
        let q3xxs = packed(iq3_xxs());
        assert_eq!(
            q3xxs[..16],
            [0, 2, 4, 9, 11, 15, 16, 18, 25, 34, 59, 61, 65, 67, 72, 74]
        );
        assert_eq!(
            q3xxs[240..],
            [
                3626, 3670, 3680, 3722, 3749, 3754, 3776, 3789, 3803, 3824, 3857, 3873, 3904, 3906,
                3924, 3992
            ]
        );
        let q3s = packed(iq3_s());
        assert_eq!(
            q3s[..16],
            [0, 1, 2, 5, 7, 8, 9, 10, 12, 14, 16, 17, 21, 27, 32, 34]
        );
        assert_eq!(
            q3s[496..],
            [
                3736, 3753, 3778, 3802, 3805, 3819, 3841, 3845, 3851, 3856, 3880, 3922, 3938, 3970,
                3993, 4032
            ]
        );
        // Every table is sorted, as ggml's are, and has its size.
        for (t, n) in [(xxs, 256), (packed(iq2_xs()), 512), (packed(iq1()), 2048)] {
            assert_eq!(t.len(), n);
            assert!(t.windows(2).all(|w| w[0] < w[1]));
        }
    }

    #[test]
    fn neighbours_are_the_nearest_points_in_distance_then_index_order() {
        let dist = |p: &[i8; 8], levels: &[i8]| -> i32 {
            p.iter()
                .zip(levels)
                .map(|(&g, &l)| (g as i32 - (2 * l as i32 + 1)).pow(2))
                .sum()
        };
        let off_grid = [[2i8, 2, 2, 2, 2, 2, 2, 1], [1, 0, 2, 1, 0, 2, 1, 0], [2; 8]];
        for (lat, nwant) in [(iq2_s(), 1), (iq2_xxs(), 2), (iq1(), 3)] {
            let mut checked = 0;
            for levels in off_grid {
                let Some(Lookup::Neighbours(nb)) = lat.lookup(lat.pack(&levels)) else {
                    continue;
                };
                let mut all: Vec<(i32, u16)> = (0..lat.len())
                    .map(|k| (dist(lat.point(k), &levels), k as u16))
                    .collect();
                all.sort();
                let mut distinct: Vec<i32> = all.iter().map(|a| a.0).collect();
                distinct.dedup();
                let want: Vec<u16> = all
                    .iter()
                    .filter(|a| a.0 <= distinct[nwant - 1])
                    .map(|a| a.1)
                    .collect();
                assert_eq!(nb, &want[..]);
                checked += 1;
            }
            assert!(checked > 0);
        }
        let lat = iq2_s();
        // A grid point maps to itself.
        assert_eq!(lat.lookup(0), Some(Lookup::OnGrid(0)));
        // Levels above the clamp are never looked up.
        assert_eq!(lat.lookup(3), None);
    }
}
