//! The tables that the processes of a group share, merged: categories by name, marker
//! schemas by name. A category keeps the colour and subcategories of the first profile that
//! declares it. A schema declared the same way by several profiles is kept once; one that a
//! later profile declares differently (Mozilla's `CPU` and ours, say) is kept under a name
//! of its own, `NAME (N)` for the N-th input, and that input's markers are renamed with it,
//! so that every marker is still read by the schema it was written for.

use serde_json::Value;
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Categories {
    list: Vec<Value>,
    by_name: HashMap<String, u32>,
}

impl Categories {
    /// Adds a profile's categories; returns, for each of its indexes, the group's.
    pub(super) fn add(&mut self, categories: &[Value]) -> Vec<u32> {
        categories
            .iter()
            .map(|category| {
                let name = category["name"].as_str().unwrap_or_default().to_owned();
                *self.by_name.entry(name).or_insert_with(|| {
                    self.list.push(category.clone());
                    (self.list.len() - 1) as u32
                })
            })
            .collect()
    }

    pub(super) fn into_list(self) -> Vec<Value> {
        self.list
    }
}

#[derive(Default)]
pub(super) struct Schemas {
    list: Vec<Value>,
    by_name: HashMap<String, usize>,
}

impl Schemas {
    /// Adds the schemas of the `number`-th input; returns its renamed ones: old name to new.
    pub(super) fn add(&mut self, schemas: &[Value], number: usize) -> HashMap<String, String> {
        let mut renamed = HashMap::new();
        for schema in schemas {
            let Some(name) = schema["name"].as_str() else {
                continue;
            };
            match self.by_name.get(name) {
                None => self.push(name.to_owned(), schema.clone()),
                Some(&known) if self.list[known] == *schema => {}
                Some(_) => {
                    let mut new_name = format!("{name} ({number})");
                    while self.by_name.contains_key(&new_name) {
                        new_name.push('\'');
                    }
                    let mut schema = schema.clone();
                    schema["name"] = Value::from(new_name.clone());
                    self.push(new_name.clone(), schema);
                    renamed.insert(name.to_owned(), new_name);
                }
            }
        }
        renamed
    }

    fn push(&mut self, name: String, schema: Value) {
        self.by_name.insert(name, self.list.len());
        self.list.push(schema);
    }

    pub(super) fn into_list(self) -> Vec<Value> {
        self.list
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn categories_merge_by_name_and_map_every_index() {
        let mut categories = Categories::default();
        let first = [
            json!({"name": "Other", "color": "grey"}),
            json!({"name": "Task"}),
        ];
        let second = [
            json!({"name": "Log", "color": "blue"}),
            json!({"name": "Other", "color": "red"}),
        ];
        assert_eq!(categories.add(&first), [0, 1]);
        assert_eq!(categories.add(&second), [2, 0]);
        let list = categories.into_list();
        assert_eq!(list.len(), 3);
        assert_eq!(list[0]["color"], "grey", "the first declaration is kept");
    }

    #[test]
    fn a_schema_declared_differently_later_is_kept_under_a_name_of_its_own() {
        let mut schemas = Schemas::default();
        let cpu = json!({"name": "CPU", "data": [], "graphs": [{"key": "user"}]});
        let other_cpu = json!({"name": "CPU", "data": [], "graphs": [{"key": "busy"}]});
        let text = json!({"name": "Text", "data": []});
        assert!(schemas.add(&[cpu.clone(), text.clone()], 1).is_empty());
        let renamed = schemas.add(&[text, other_cpu], 2);
        assert_eq!(renamed, HashMap::from([("CPU".into(), "CPU (2)".into())]));
        let names: Vec<Value> = schemas
            .into_list()
            .iter()
            .map(|s| s["name"].clone())
            .collect();
        assert_eq!(names, [json!("CPU"), json!("Text"), json!("CPU (2)")]);
    }
}
