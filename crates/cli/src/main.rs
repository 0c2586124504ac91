//! The `mslink` command.
fn main() {
    println!("mslink");
}
