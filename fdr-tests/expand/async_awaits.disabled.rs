async fn serve(&self, rx: Receiver<u32>) -> u32 {
    let a = self.db.get(1).await.len().await;
    let later = async { self.db.get(2).await };
    let v = tokio::select! { biased ; v = rx => v . unwrap () , _ = tokio :: time :: sleep (LIMIT) , if self . bounded => { self . late () . await } else => 0 , };
    let (x, y) = tokio::join!(later, self.db.get(3));
    println!("{}", self.db.get(4).await);
    a + v + x + y
}
