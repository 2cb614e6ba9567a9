//! Stored rooftops read back as the typed DAP rooftop: a row that does not
//! read is reported corrupt with the rooftop and what does not read.

use super::*;

#[tokio::test]
async fn an_unreadable_stored_rooftop_is_corrupt_and_named() {
    let db = TestDb::sqlite();
    let store = SqliteStore::open(&db.url).await.unwrap();
    let a = org("org-a", "A", vec![rooftop("a-1", "One")]);
    store.upsert_organizations(&[a]).await.unwrap();
    // A member the DAP rooftop does not have (as if edited by hand).
    sqlx::query("update rooftops set dap = json_set(dap, '$.city', 'Springfield')")
        .execute(&store.pool)
        .await
        .unwrap();
    let err = store.get_organization("org-a").await.expect_err("corrupt");
    let StoreError::Corrupt(what) = &err else {
        panic!("{err:?}")
    };
    assert!(what.contains("'a-1'"), "{what}");
    assert!(what.contains("unknown field `city`"), "{what}");
    assert!(store.list_organizations().await.is_err());
}
