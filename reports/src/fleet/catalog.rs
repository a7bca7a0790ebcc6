//! The instance types a recommendation chooses from: `name,cores,memory_gib,price_per_hour`
//! lines (CSV, a header and `#` comments allowed); [`Catalog::default`] is the repo's
//! `instances.csv`, which names its sources.

use serde::Serialize;

const GIB: f64 = (1u64 << 30) as f64;
const DEFAULT_CATALOG: &str = include_str!("instances.csv");
const HEADER: &str = "name,cores,memory_gib,price_per_hour";

/// An instance type and its price.
#[derive(Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InstanceType {
    pub name: String,
    pub cores: f64,
    pub memory_bytes: f64,
    pub price_per_hour: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Catalog {
    types: Vec<InstanceType>,
}

/// A catalog line that is not `name,cores,memory_gib,price_per_hour`.
#[derive(thiserror::Error, Debug, PartialEq)]
#[non_exhaustive]
#[error("line {line}: {why}; each line is {HEADER} (numbers > 0)")]
pub struct CatalogError {
    pub line: usize,
    pub why: String,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog::parse(DEFAULT_CATALOG)
            .unwrap_or_else(|e| unreachable!("the shipped catalog parses: {e}"))
    }
}

impl Catalog {
    pub fn parse(text: &str) -> Result<Catalog, CatalogError> {
        let mut types = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line == HEADER {
                continue;
            }
            let error = |why: &str| CatalogError {
                line: index + 1,
                why: why.to_owned(),
            };
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            let [name, cores, memory_gib, price] = fields[..] else {
                return Err(error(&format!("{} fields, not 4", fields.len())));
            };
            let number = |text: &str, what: &str| match text.parse::<f64>() {
                Ok(value) if value > 0.0 && value.is_finite() => Ok(value),
                _ => Err(error(&format!("{what} {text:?} is not a number above 0"))),
            };
            if name.is_empty() {
                return Err(error("no name"));
            }
            types.push(InstanceType {
                name: name.to_owned(),
                cores: number(cores, "cores")?,
                memory_bytes: number(memory_gib, "memory_gib")? * GIB,
                price_per_hour: number(price, "price_per_hour")?,
            });
        }
        if types.is_empty() {
            return Err(CatalogError {
                line: 0,
                why: "no instance type".to_owned(),
            });
        }
        Ok(Catalog { types })
    }

    pub fn get(&self, name: &str) -> Option<&InstanceType> {
        self.types.iter().find(|t| t.name == name)
    }

    /// The cheapest type with at least these cores and memory (fewer cores, then less
    /// memory, on a tie).
    pub fn cheapest_covering(&self, cores: f64, memory_bytes: f64) -> Option<&InstanceType> {
        self.types
            .iter()
            .filter(|t| t.cores >= cores && t.memory_bytes >= memory_bytes)
            .min_by(|a, b| {
                let key = |t: &InstanceType| (t.price_per_hour, t.cores, t.memory_bytes);
                let (a, b) = (key(a), key(b));
                a.0.total_cmp(&b.0)
                    .then(a.1.total_cmp(&b.1))
                    .then(a.2.total_cmp(&b.2))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cheapest_type_that_covers_both_is_chosen() {
        let catalog = Catalog::default();
        let chosen = catalog.cheapest_covering(3.0, 10.0 * GIB).unwrap();
        assert_eq!(chosen.name, "m5.xlarge");
        assert_eq!(
            catalog.cheapest_covering(3.0, 5.0 * GIB).unwrap().name,
            "c5.xlarge"
        );
        assert_eq!(catalog.cheapest_covering(500.0, 1.0), None);
    }

    #[test]
    fn a_bad_line_is_named_with_what_a_line_must_be() {
        let error =
            Catalog::parse("name,cores,memory_gib,price_per_hour\nbig,8,x,1\n").unwrap_err();
        assert_eq!(
            error.to_string(),
            "line 2: memory_gib \"x\" is not a number above 0; each line is \
             name,cores,memory_gib,price_per_hour (numbers > 0)"
        );
        assert!(Catalog::parse("# nothing\n").is_err());
    }
}
