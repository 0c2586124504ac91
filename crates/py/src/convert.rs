//! Python values <-> TOML values.
//!
//! Contract: dicts with string keys become tables, lists and tuples arrays, `bool`, `int`,
//! `float` and `str` the matching scalars (numpy scalars too, through `__index__` /
//! `__float__`); anything else, `None` included, is refused with a `ScenarioError` naming the
//! dotted path of the value. TOML dates come back as their text.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Converts a Python value at `path` (for error messages) to a TOML value.
pub fn from_py(v: &Bound<'_, PyAny>, path: &str) -> PyResult<toml::Value> {
    let py = v.py();
    if v.is_instance_of::<PyBool>() {
        return Ok(toml::Value::Boolean(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return v.extract::<i64>().map(toml::Value::Integer).map_err(|_| {
            crate::scenario_error(
                py,
                path,
                format!("key `{path}`: integer {v} does not fit TOML's 64-bit integers"),
            )
        });
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(toml::Value::Float(v.extract()?));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(toml::Value::String(v.extract()?));
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut t = toml::Table::new();
        for (k, x) in d.iter() {
            let Ok(k) = k.extract::<String>() else {
                return Err(crate::scenario_error(
                    py,
                    path,
                    format!("key `{path}`: table keys must be strings, got {k:?}"),
                ));
            };
            let x = from_py(&x, &join(path, &k))?;
            t.insert(k, x);
        }
        return Ok(toml::Value::Table(t));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut a = Vec::new();
        for (i, x) in v.try_iter()?.enumerate() {
            a.push(from_py(&x?, &join(path, &i.to_string()))?);
        }
        return Ok(toml::Value::Array(a));
    }
    // numpy and other number-like scalars.
    if v.hasattr("__index__")? {
        if let Ok(i) = v.call_method0("__index__").and_then(|i| i.extract::<i64>()) {
            return Ok(toml::Value::Integer(i));
        }
    }
    if v.hasattr("__float__")? && !v.is_none() {
        if let Ok(f) = v.call_method0("__float__").and_then(|f| f.extract::<f64>()) {
            return Ok(toml::Value::Float(f));
        }
    }
    let kind = v.get_type().name()?.to_string();
    Err(crate::scenario_error(
        py,
        path,
        format!("key `{path}`: a {kind} is not a scenario value (numbers, strings, booleans, lists and dicts are)"),
    ))
}

/// Converts a TOML value to Python.
pub fn to_py(py: Python<'_>, v: &toml::Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        toml::Value::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Integer(i) => i.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Float(f) => f.into_pyobject(py)?.into_any().unbind(),
        toml::Value::Boolean(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        toml::Value::Datetime(d) => d.to_string().into_pyobject(py)?.into_any().unbind(),
        toml::Value::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(to_py(py, x)?)?;
            }
            l.into_any().unbind()
        }
        toml::Value::Table(t) => {
            let d = PyDict::new(py);
            for (k, x) in t {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}
